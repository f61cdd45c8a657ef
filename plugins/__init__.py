"""Horizon's built-in plugins, each registered in the ``horizon.plugins`` entry-point group."""
