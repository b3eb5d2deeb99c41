"""`python -m hanzo_engine` runs the `hanzo-engine` command."""

from hanzo_engine.cli import main

if __name__ == "__main__":
    main(prog_name="hanzo-engine")
