"""``agent threed ...``: the 3D plugin's commands, added to Horizon's CLI through the
``horizon.commands`` entry-point group (``core.plugin.COMMANDS_GROUP``)."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, help="3D plugin utilities.")


@app.command("build-addon")
def build_addon_cmd(output: Path = typer.Option(Path("."), "--output", "-o", help="the zip file, or a folder for it")) -> None:
    """Write the Blender add-on (extension zip, Blender 4.2+) to install with Preferences > Get Extensions > Install from Disk."""
    from plugins.threed.build_addon import build_addon

    try:
        path = build_addon(output)
    except OSError as exc:
        typer.echo(f"Error: cannot write the add-on zip to {output}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {path}")
