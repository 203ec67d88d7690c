"""Accessibility checks with axe-core, run inside a Playwright page.

axe-core's script ships inside the axe-playwright-python wheel (``axe.min.js``), so a
check fetches nothing. No rule is disabled: a violation is fixed in the site's CSS,
templates or theme configuration.
"""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

# The impacts that fail a test; "minor" and "moderate" findings are not blocking.
BLOCKING_IMPACTS = frozenset({"serious", "critical"})

# The rules whose outcome depends on the colour scheme, checked again in dark mode.
COLOUR_RULES = ("color-contrast", "link-in-text-block")

_AXE = Axe()


def blocking_violations(page: Page, rules: tuple[str, ...] | None = None) -> list[str]:
    """Serious or critical axe violations on ``page``, one line per element.

    ``rules`` limits the check to those axe rule ids; ``None`` runs every rule.
    """
    options: dict = {"resultTypes": ["violations"]}
    if rules is not None:
        options["runOnly"] = {"type": "rule", "values": list(rules)}
    violations = _AXE.run(page, options=options).response["violations"]
    return [
        f"{violation['id']} ({violation['impact']}): {violation['help']}; "
        f"at {' '.join(node['target'])}: {node['failureSummary']}"
        for violation in violations
        if violation["impact"] in BLOCKING_IMPACTS
        for node in violation["nodes"]
    ]
