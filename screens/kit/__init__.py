"""What the screens are built from and share: `DashScreen` (base.py), cell builders (format.py), tones and
literal text (text.py), the table filter (filtering.py), row presenters (presenters.py, rowcache.py), the
messages to the app (messages.py), the overlays every screen opens (help, palette, `:` jumps, confirm) and
the shape of the screen registry (entries.py). The kit imports no screen."""
