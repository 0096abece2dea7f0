"""``python -m precedent.sandbox``: the same as ``precedent sandbox``."""

from precedent.sandbox.cli import sandbox_command

if __name__ == "__main__":
    sandbox_command()
