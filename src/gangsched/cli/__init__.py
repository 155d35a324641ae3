"""The ``gangsched`` command line (typer + rich). The app is :data:`gangsched.cli.main.app`."""
