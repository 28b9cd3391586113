"""`manage.py tools_doc [--check] [--output PATH]`: write docs/tools.md from the registry.

The text is `rooms.tooldocs.tools_markdown()`; run this after changing a tool, its
arguments or its result, and commit the file with the change (tests/test_tools_doc.py
fails until you do). `--check` writes nothing and exits non-zero when the file is stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from rooms.tooldocs import tools_markdown


def tools_doc_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "tools.md"


class Command(BaseCommand):
    help = "Write docs/tools.md (every tool, argument by argument) from rooms/registry.py."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", help="where to write (default: docs/tools.md)")
        parser.add_argument(
            "--check", action="store_true", help="only say whether the file is up to date"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["output"]) if options["output"] else tools_doc_path()
        text = tools_markdown()
        if options["check"]:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != text:
                raise CommandError(f"{path} is stale: run `python manage.py tools_doc`.")
            self.stdout.write(f"{path} is up to date.")
            return
        path.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {path} ({text.count(chr(10))} lines)")
