"""The one error of the template reader."""

from __future__ import annotations


class TemplateError(ValueError):
    """The template cannot be deployed locally; the message names the resource and property."""
