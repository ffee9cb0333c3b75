"""Typed navigation messages: screens, widgets and the palette ask; the app decides how to show."""

from __future__ import annotations

from textual.message import Message

from engine.rules.base import ObjRef


class Navigate(Message):
    """Show one of the numbered screens (by its name, e.g. "pool")."""

    def __init__(self, screen: str) -> None:
        super().__init__()
        self.screen = screen


class OpenObject(Message):
    """Drill down into one object: a TauWorkspace opens the workspace detail, anything else the object detail."""

    def __init__(self, ref: ObjRef, raw: bool = False) -> None:
        super().__init__()
        self.ref = ref
        self.raw = raw  # the object detail (YAML) even for a TauWorkspace


class RequestOperation(Message):
    """A guided operation (issue 9) asks to write. Nothing posts it yet; the app refuses it in read-only
    mode and otherwise asks for confirmation naming every target (`ConfirmScreen`) before anything runs."""

    def __init__(self, title: str, targets: list[str], reversible: bool) -> None:
        super().__init__()
        self.title = title
        self.targets = targets
        self.reversible = reversible
