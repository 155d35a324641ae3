"""The README and docs/ hold everything a user needs, inside the repository (issue 12)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_readme_starts_with_the_two_setup_commands() -> None:
    text = README.read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert block.splitlines()[:2] == ["pip install . && gangsched simulate",
                                      "pip install '.[test]' && pytest"]
    assert text.index("```bash") < text.index("## ")


def test_every_local_link_resolves_inside_the_repository() -> None:
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        assert "../shared" not in text, page
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            resolved = (page.parent / target).resolve()
            assert resolved.exists(), (page, target)
            assert ROOT in resolved.parents, (page, target)


def test_the_readme_links_the_design_and_cli_docs_and_maps_other_schedulers() -> None:
    text = README.read_text()
    for doc in ("docs/design.md", "docs/cli.md", "docs/placement-result.md"):
        assert f"]({doc})" in text and (ROOT / doc).is_file()
    section = text.split("## For Volcano / Kueue / KAI users", 1)[1].split("\n## ", 1)[0]
    for habit in ("minMember", "podset-required-topology", "queue-name", "subGroups",
                  "gangsched explain", "-o wide"):
        assert habit in section, habit
    design = (ROOT / "docs" / "design.md").read_text()
    for topic in ("## The gang tree", "## What the engine guarantees", "## Layers",
                  "## Conventions"):
        assert topic in design


def test_exit_codes_are_documented_where_users_look() -> None:
    cli = (ROOT / "docs" / "cli.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |"):
        assert code in cli
    assert "--allow-rejected" in cli and "--allow-rejected" in README.read_text()
