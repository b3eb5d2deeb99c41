"""Meilisearch's error table, in one place.

Every error the server answers with, and every failed task's `error` field, comes from a code in
`ERROR_TABLE`: the code gives the `type` and the HTTP status; the `link` is derived from the code.
The engine and scheduler raise `MeiliError(code, message)`; only the server turns it into a response.
"""

from __future__ import annotations

from typing import Final

ERRORS_LINK_PREFIX: Final = "https://docs.meilisearch.com/errors#"

# code -> (type, HTTP status). 288 codes, as Meilisearch's `Code` enum.
ERROR_TABLE: Final[dict[str, tuple[str, int]]] = {
    "invalid_s_3_snapshot_parameters": ("internal", 400),
    "invalid_s_3_snapshot_request": ("internal", 400),
    "unretrievable_document": ("internal", 400),
    "missing_authorization_header": ("auth", 401),
    "missing_master_key": ("auth", 401),
    "invalid_api_key": ("auth", 403),
    "remote_invalid_api_key": ("auth", 403),
    "api_key_not_found": ("invalid_request", 404),
    "batch_not_found": ("invalid_request", 404),
    "chat_not_found": ("invalid_request", 404),
    "document_not_found": ("invalid_request", 404),
    "dump_not_found": ("invalid_request", 404),
    "dynamic_search_rule_not_found": ("invalid_request", 404),
    "index_not_found": ("invalid_request", 404),
    "render_document_not_found": ("invalid_request", 404),
    "task_file_not_found": ("invalid_request", 404),
    "task_not_found": ("invalid_request", 404),
    "webhook_not_found": ("invalid_request", 404),
    "api_key_already_exists": ("invalid_request", 409),
    "dump_already_processing": ("invalid_request", 409),
    "index_already_exists": ("invalid_request", 409),
    "import_task_already_received": ("invalid_request", 412),
    "import_task_unknown_remote": ("invalid_request", 412),
    "network_version_mismatch": ("invalid_request", 412),
    "receive_import_finished_unknown_remote": ("invalid_request", 412),
    "payload_too_large": ("invalid_request", 413),
    "invalid_content_type": ("invalid_request", 415),
    "missing_content_type": ("invalid_request", 415),
    "unsupported_media_type": ("invalid_request", 415),
    "io_error": ("system", 422),
    "no_space_left_on_device": ("system", 422),
    "too_many_open_files": ("system", 422),
    "requires_enterprise_edition": ("invalid_request", 451),
    "database_size_limit_reached": ("internal", 500),
    "dump_process_failed": ("internal", 500),
    "index_creation_failed": ("internal", 500),
    "internal": ("internal", 500),
    "invalid_state": ("internal", 500),
    "invalid_store_file": ("internal", 500),
    "unimplemented_external_function_calling": ("invalid_request", 501),
    "unimplemented_multi_choice_chat_completions": ("invalid_request", 501),
    "unimplemented_non_streaming_chat_completions": ("invalid_request", 501),
    "remote_bad_response": ("system", 502),
    "remote_could_not_send_request": ("system", 502),
    "remote_remote_error": ("system", 502),
    "remote_timeout": ("system", 502),
    "s_3_snapshot_server_error": ("internal", 502),
    "import_task_without_network_task": ("invalid_request", 503),
    "too_many_search_requests": ("system", 503),
    "bad_request": ("invalid_request", 400),
    "bad_parameter": ("invalid_request", 400),
    "index_scoped_api_key_with_global_action": ("invalid_request", 400),
    "duplicate_index_found": ("invalid_request", 400),
    "index_primary_key_already_exists": ("invalid_request", 400),
    "index_primary_key_multiple_candidates_found": ("invalid_request", 400),
    "index_primary_key_no_candidate_found": ("invalid_request", 400),
    "inconsistent_document_change_headers": ("invalid_request", 400),
    "invalid_header_value": ("invalid_request", 400),
    "invalid_vector_dimensions": ("invalid_request", 400),
    "invalid_vectors_type": ("invalid_request", 400),
    "invalid_skip_creation": ("invalid_request", 400),
    "facet_search_disabled": ("invalid_request", 400),
    "invalid_batch_uids": ("invalid_request", 400),
    "feature_not_enabled": ("invalid_request", 400),
    "malformed_payload": ("invalid_request", 400),
    "max_fields_limit_exceeded": ("invalid_request", 400),
    "not_leader": ("invalid_request", 400),
    "remote_bad_request": ("invalid_request", 400),
    "unknown_remote": ("invalid_request", 400),
    "too_many_vectors": ("invalid_request", 400),
    "unexpected_network_previous_remotes": ("invalid_request", 400),
    "network_version_too_old": ("invalid_request", 400),
    "unprocessed_network_task": ("invalid_request", 400),
    "unretrievable_error_code": ("invalid_request", 400),
    "vector_embedding_error": ("invalid_request", 400),
    "not_found_similar_id": ("invalid_request", 400),
    "edit_documents_by_function_error": ("invalid_request", 400),
    "invalid_chat_setting_document_template": ("invalid_request", 400),
    "invalid_render_template": ("invalid_request", 400),
    "invalid_render_input": ("invalid_request", 400),
    "template_parsing_error": ("invalid_request", 400),
    "template_rendering_error": ("invalid_request", 400),
    "invalid_api_key_actions": ("invalid_request", 400),
    "invalid_api_key_description": ("invalid_request", 400),
    "invalid_api_key_expires_at": ("invalid_request", 400),
    "invalid_api_key_indexes": ("invalid_request", 400),
    "invalid_api_key_limit": ("invalid_request", 400),
    "invalid_api_key_name": ("invalid_request", 400),
    "invalid_api_key_offset": ("invalid_request", 400),
    "invalid_api_key_uid": ("invalid_request", 400),
    "immutable_api_key_actions": ("invalid_request", 400),
    "immutable_api_key_created_at": ("invalid_request", 400),
    "immutable_api_key_expires_at": ("invalid_request", 400),
    "immutable_api_key_indexes": ("invalid_request", 400),
    "immutable_api_key_key": ("invalid_request", 400),
    "immutable_api_key_uid": ("invalid_request", 400),
    "immutable_api_key_updated_at": ("invalid_request", 400),
    "missing_api_key_actions": ("invalid_request", 400),
    "missing_api_key_expires_at": ("invalid_request", 400),
    "missing_api_key_indexes": ("invalid_request", 400),
    "invalid_index_limit": ("invalid_request", 400),
    "invalid_index_offset": ("invalid_request", 400),
    "invalid_index_primary_key": ("invalid_request", 400),
    "invalid_index_custom_metadata": ("invalid_request", 400),
    "invalid_index_uid": ("invalid_request", 400),
    "immutable_index_created_at": ("invalid_request", 400),
    "immutable_index_updated_at": ("invalid_request", 400),
    "missing_index_uid": ("invalid_request", 400),
    "invalid_index_fields_filter": ("invalid_request", 400),
    "invalid_index_fields_filter_attribute_patterns": ("invalid_request", 400),
    "invalid_index_fields_filter_displayed": ("invalid_request", 400),
    "invalid_index_fields_filter_searchable": ("invalid_request", 400),
    "invalid_index_fields_filter_sortable": ("invalid_request", 400),
    "invalid_index_fields_filter_distinct": ("invalid_request", 400),
    "invalid_index_fields_filter_ranking_rule": ("invalid_request", 400),
    "invalid_index_fields_filter_filterable": ("invalid_request", 400),
    "invalid_document_csv_delimiter": ("invalid_request", 400),
    "invalid_document_fields": ("invalid_request", 400),
    "invalid_document_retrieve_vectors": ("invalid_request", 400),
    "invalid_document_filter": ("invalid_request", 400),
    "invalid_document_sort": ("invalid_request", 400),
    "invalid_document_use_network": ("invalid_request", 400),
    "invalid_document_geo_field": ("invalid_request", 400),
    "invalid_document_geojson_field": ("invalid_request", 400),
    "invalid_document_id": ("invalid_request", 400),
    "invalid_document_ids": ("invalid_request", 400),
    "invalid_document_limit": ("invalid_request", 400),
    "invalid_document_offset": ("invalid_request", 400),
    "invalid_document_edition_context": ("invalid_request", 400),
    "invalid_document_edition_function_filter": ("invalid_request", 400),
    "missing_document_filter": ("invalid_request", 400),
    "missing_document_edition_function": ("invalid_request", 400),
    "missing_document_id": ("invalid_request", 400),
    "missing_payload": ("invalid_request", 400),
    "invalid_search_q": ("invalid_request", 400),
    "invalid_search_offset": ("invalid_request", 400),
    "invalid_search_limit": ("invalid_request", 400),
    "invalid_search_page": ("invalid_request", 400),
    "invalid_search_hits_per_page": ("invalid_request", 400),
    "invalid_search_attributes_to_retrieve": ("invalid_request", 400),
    "invalid_search_attributes_to_crop": ("invalid_request", 400),
    "invalid_search_crop_length": ("invalid_request", 400),
    "invalid_search_crop_marker": ("invalid_request", 400),
    "invalid_search_attributes_to_highlight": ("invalid_request", 400),
    "invalid_search_highlight_pre_tag": ("invalid_request", 400),
    "invalid_search_highlight_post_tag": ("invalid_request", 400),
    "invalid_search_show_matches_position": ("invalid_request", 400),
    "invalid_search_filter": ("invalid_request", 400),
    "invalid_search_sort": ("invalid_request", 400),
    "invalid_search_distinct": ("invalid_request", 400),
    "invalid_search_facets": ("invalid_request", 400),
    "invalid_search_matching_strategy": ("invalid_request", 400),
    "invalid_search_attributes_to_search_on": ("invalid_request", 400),
    "invalid_search_ranking_score_threshold": ("invalid_request", 400),
    "invalid_search_locales": ("invalid_request", 400),
    "invalid_search_hybrid_query": ("invalid_request", 400),
    "invalid_search_embedder": ("invalid_request", 400),
    "invalid_search_semantic_ratio": ("invalid_request", 400),
    "invalid_search_vector": ("invalid_request", 400),
    "invalid_search_media": ("invalid_request", 400),
    "invalid_search_media_and_vector": ("invalid_request", 400),
    "invalid_search_retrieve_vectors": ("invalid_request", 400),
    "invalid_search_show_ranking_score": ("invalid_request", 400),
    "invalid_search_show_ranking_score_details": ("invalid_request", 400),
    "invalid_search_show_performance_details": ("invalid_request", 400),
    "invalid_search_use_network": ("invalid_request", 400),
    "invalid_search_personalize": ("invalid_request", 400),
    "invalid_search_personalize_user_context": ("invalid_request", 400),
    "missing_search_hybrid": ("invalid_request", 400),
    "invalid_similar_id": ("invalid_request", 400),
    "invalid_similar_embedder": ("invalid_request", 400),
    "invalid_similar_filter": ("invalid_request", 400),
    "invalid_similar_offset": ("invalid_request", 400),
    "invalid_similar_limit": ("invalid_request", 400),
    "invalid_similar_attributes_to_retrieve": ("invalid_request", 400),
    "invalid_similar_retrieve_vectors": ("invalid_request", 400),
    "invalid_similar_ranking_score_threshold": ("invalid_request", 400),
    "invalid_similar_show_ranking_score": ("invalid_request", 400),
    "invalid_similar_show_ranking_score_details": ("invalid_request", 400),
    "invalid_similar_show_performance_details": ("invalid_request", 400),
    "invalid_facet_search_facet_name": ("invalid_request", 400),
    "invalid_facet_search_query": ("invalid_request", 400),
    "invalid_facet_search_name": ("invalid_request", 400),
    "invalid_facet_search_exhaustive_facet_count": ("invalid_request", 400),
    "missing_facet_search_facet_name": ("invalid_request", 400),
    "invalid_multi_search_facets": ("invalid_request", 400),
    "invalid_multi_search_facets_by_index": ("invalid_request", 400),
    "invalid_multi_search_facet_order": ("invalid_request", 400),
    "invalid_multi_search_query_personalization": ("invalid_request", 400),
    "invalid_multi_search_query_show_performance_details": ("invalid_request", 400),
    "invalid_multi_search_federated": ("invalid_request", 400),
    "invalid_multi_search_federation_options": ("invalid_request", 400),
    "invalid_multi_search_max_values_per_facet": ("invalid_request", 400),
    "invalid_multi_search_merge_facets": ("invalid_request", 400),
    "invalid_multi_search_query_facets": ("invalid_request", 400),
    "invalid_multi_search_distinct": ("invalid_request", 400),
    "invalid_multi_search_query_pagination": ("invalid_request", 400),
    "invalid_multi_search_query_ranking_rules": ("invalid_request", 400),
    "invalid_multi_search_query_position": ("invalid_request", 400),
    "invalid_multi_search_remote": ("invalid_request", 400),
    "invalid_multi_search_weight": ("invalid_request", 400),
    "invalid_settings_displayed_attributes": ("invalid_request", 400),
    "invalid_settings_searchable_attributes": ("invalid_request", 400),
    "invalid_settings_filterable_attributes": ("invalid_request", 400),
    "invalid_settings_sortable_attributes": ("invalid_request", 400),
    "invalid_settings_foreign_keys": ("invalid_request", 400),
    "invalid_settings_ranking_rules": ("invalid_request", 400),
    "invalid_settings_stop_words": ("invalid_request", 400),
    "invalid_settings_non_separator_tokens": ("invalid_request", 400),
    "invalid_settings_separator_tokens": ("invalid_request", 400),
    "invalid_settings_dictionary": ("invalid_request", 400),
    "invalid_settings_synonyms": ("invalid_request", 400),
    "invalid_settings_distinct_attribute": ("invalid_request", 400),
    "invalid_settings_proximity_precision": ("invalid_request", 400),
    "invalid_settings_typo_tolerance": ("invalid_request", 400),
    "invalid_settings_faceting": ("invalid_request", 400),
    "invalid_settings_pagination": ("invalid_request", 400),
    "invalid_settings_embedders": ("invalid_request", 400),
    "invalid_settings_search_cutoff_ms": ("invalid_request", 400),
    "invalid_settings_localized_attributes": ("invalid_request", 400),
    "invalid_settings_facet_search": ("invalid_request", 400),
    "invalid_settings_prefix_search": ("invalid_request", 400),
    "invalid_settings_index_chat": ("invalid_request", 400),
    "invalid_task_uids": ("invalid_request", 400),
    "invalid_task_statuses": ("invalid_request", 400),
    "invalid_task_types": ("invalid_request", 400),
    "invalid_task_canceled_by": ("invalid_request", 400),
    "invalid_task_limit": ("invalid_request", 400),
    "invalid_task_from": ("invalid_request", 400),
    "invalid_task_reverse": ("invalid_request", 400),
    "invalid_task_before_enqueued_at": ("invalid_request", 400),
    "invalid_task_after_enqueued_at": ("invalid_request", 400),
    "invalid_task_before_started_at": ("invalid_request", 400),
    "invalid_task_after_started_at": ("invalid_request", 400),
    "invalid_task_before_finished_at": ("invalid_request", 400),
    "invalid_task_after_finished_at": ("invalid_request", 400),
    "missing_task_filters": ("invalid_request", 400),
    "invalid_swap_indexes": ("invalid_request", 400),
    "invalid_swap_duplicate_index_found": ("invalid_request", 400),
    "invalid_swap_rename": ("invalid_request", 400),
    "missing_swap_indexes": ("invalid_request", 400),
    "invalid_stats_show_internal_database_sizes": ("invalid_request", 400),
    "invalid_stats_size_format": ("invalid_request", 400),
    "invalid_network_leader": ("invalid_request", 400),
    "invalid_network_remotes": ("invalid_request", 400),
    "invalid_network_shards": ("invalid_request", 400),
    "invalid_network_self": ("invalid_request", 400),
    "invalid_network_search_api_key": ("invalid_request", 400),
    "invalid_network_write_api_key": ("invalid_request", 400),
    "invalid_network_url": ("invalid_request", 400),
    "missing_network_url": ("invalid_request", 400),
    "invalid_export_url": ("invalid_request", 400),
    "invalid_export_api_key": ("invalid_request", 400),
    "invalid_export_payload_size": ("invalid_request", 400),
    "invalid_export_indexes_patterns": ("invalid_request", 400),
    "invalid_export_index_filter": ("invalid_request", 400),
    "invalid_export_index_override_settings": ("invalid_request", 400),
    "invalid_chat_completion_org_id": ("invalid_request", 400),
    "invalid_chat_completion_project_id": ("invalid_request", 400),
    "invalid_chat_completion_api_version": ("invalid_request", 400),
    "invalid_chat_completion_deployment_id": ("invalid_request", 400),
    "invalid_chat_completion_source": ("invalid_request", 400),
    "invalid_chat_completion_base_api": ("invalid_request", 400),
    "invalid_chat_completion_api_key": ("invalid_request", 400),
    "invalid_chat_completion_prompts": ("invalid_request", 400),
    "invalid_chat_completion_system_prompt": ("invalid_request", 400),
    "invalid_chat_completion_search_description_prompt": ("invalid_request", 400),
    "invalid_chat_completion_search_query_param_prompt": ("invalid_request", 400),
    "invalid_chat_completion_search_filter_param_prompt": ("invalid_request", 400),
    "invalid_chat_completion_search_index_uid_param_prompt": ("invalid_request", 400),
    "invalid_chat_completion_pre_query_prompt": ("invalid_request", 400),
    "invalid_webhooks": ("invalid_request", 400),
    "invalid_webhook_url": ("invalid_request", 400),
    "invalid_webhook_headers": ("invalid_request", 400),
    "invalid_webhook_uuid": ("invalid_request", 400),
    "immutable_webhook": ("invalid_request", 400),
    "immutable_webhook_uuid": ("invalid_request", 400),
    "immutable_webhook_is_editable": ("invalid_request", 400),
    "invalid_dynamic_search_rule_offset": ("invalid_request", 400),
    "invalid_dynamic_search_rule_limit": ("invalid_request", 400),
    "invalid_dynamic_search_rule_filter": ("invalid_request", 400),
    "invalid_dynamic_search_rule_description": ("invalid_request", 400),
    "invalid_dynamic_search_rule_priority": ("invalid_request", 400),
    "invalid_dynamic_search_rule_active": ("invalid_request", 400),
    "invalid_dynamic_search_rule_conditions": ("invalid_request", 400),
    "invalid_dynamic_search_rule_actions": ("invalid_request", 400),
    "invalid_dynamic_search_rule_filter_query": ("invalid_request", 400),
    "invalid_dynamic_search_rule_filter_active": ("invalid_request", 400),
}


class MeiliError(Exception):
    """A user-facing error with a Meilisearch code. `message` is the exact human text."""

    __slots__ = ("code", "message")

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_TABLE:
            raise KeyError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def error_type(self) -> str:
        return ERROR_TABLE[self.code][0]

    @property
    def status(self) -> int:
        return ERROR_TABLE[self.code][1]

    def to_json(self) -> dict[str, str]:
        return error_json(self.code, self.message)

    def __repr__(self) -> str:
        return f"MeiliError({self.code!r}, {self.message!r})"


def error_json(code: str, message: str) -> dict[str, str]:
    """The wire form of an error: message, code, type, link, in Meilisearch's key order."""
    error_type, _ = ERROR_TABLE[code]
    return {"message": message, "code": code, "type": error_type, "link": ERRORS_LINK_PREFIX + code}


IO_ERROR_SUFFIX: Final = (
    ". This error generally happens when you have no space left on device or when your database "
    "doesn't have read or write right."
)


def internal_error(message: str) -> MeiliError:
    return MeiliError("internal", message)


def index_not_found(uid: str) -> MeiliError:
    return MeiliError("index_not_found", f"Index `{uid}` not found.")


def index_already_exists(uid: str) -> MeiliError:
    return MeiliError("index_already_exists", f"Index `{uid}` already exists.")


def invalid_index_uid(uid: str) -> MeiliError:
    return MeiliError(
        "invalid_index_uid",
        f"`{uid}` is not a valid index uid. Index uid can be an integer or a string containing only "
        "alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.",
    )
