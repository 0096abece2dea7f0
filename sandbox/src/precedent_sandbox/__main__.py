"""``python -m precedent_sandbox``: the same as ``precedent sandbox``."""

from precedent_sandbox.cli import sandbox_command

if __name__ == "__main__":
    sandbox_command()
