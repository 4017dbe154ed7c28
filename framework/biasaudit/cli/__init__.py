"""The `biasaudit` command: `app` parses the command line and dispatches to the verbs."""

from biasaudit.cli.app import main

__all__ = ["main"]
