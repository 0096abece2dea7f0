"""``python -m precedent_sandbox``: the same as the ``precedent-sandbox`` command."""

from precedent_sandbox.cli import main

if __name__ == "__main__":
    main()
