"""The widgets the screens are drawn with: header, footer, filter bar, the keyed table and its column layout,
sections, bars and plots, the marked choices and the typed confirmation. They import no screen and, of the kit,
only its vocabulary (kit/text.py, kit/filtering.py, kit/messages.py)."""
