"""The README is a front door (issue 26, point 1): what it is in a few lines, a picture of
a live room, what you need, the two commands, a walkthrough; reference material lives in
docs/, where every setting the service reads is documented, and no link in either leads
nowhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_it_opens_with_the_product_a_picture_and_the_two_commands() -> None:
    lines = README.splitlines()
    assert lines[0] == "# Roomservice"
    picture = next(i for i, line in enumerate(lines) if line.startswith("!["))
    prose = [line for line in lines[1:picture] if line.strip()]
    assert 1 <= len(prose) <= 4, prose  # what it is, in a few lines
    image = LINK.search(lines[picture])
    assert image is not None and (ROOT / image.group(1)).stat().st_size > 10_000
    first_command = min(README.index("make run"), README.index("make test"))
    assert first_command < README.index("## Five minutes")
    assert "Python 3.11, 3.12 or 3.13" in README and "make" in README
    assert "nothing to install" not in README  # make run installs a .venv; it says so


def test_reference_material_lives_in_docs() -> None:
    assert "| `REDIS_URL`" not in README and "ROOM_EVENT_CAP" not in README
    assert len(README.splitlines()) < 120


def test_every_setting_the_service_reads_is_documented() -> None:
    settings = "".join(p.read_text() for p in (ROOT / "config" / "settings").glob("*.py"))
    read = set(re.findall(r'\benv_[a-z_]+\(\s*"([A-Z0-9_]+)"', settings))
    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert read and not sorted(n for n in read if f"`{n}`" not in documented)


def test_no_link_in_the_readme_or_docs_leads_nowhere() -> None:
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:", "#")):
                continue
            path = target.split("#", 1)[0]
            if path and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
