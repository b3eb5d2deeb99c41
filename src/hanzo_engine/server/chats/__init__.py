"""Conversational search (`/chats`, the index `chat` setting, `/render-template`): helpers of the routes.

- `gate`: the experimental features these routes need, with Meilisearch's errors;
- `llm`: the streaming client of an OpenAI-compatible chat-completions endpoint;
- `conversation`: the loop that lets the LLM search the instance and streams its answer as SSE.
"""
