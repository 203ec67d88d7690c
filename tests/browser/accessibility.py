"""Accessibility checks with axe-core, run inside a Playwright page.

axe-core's script ships inside the axe-playwright-python wheel (``axe.min.js``), so a
check fetches nothing. No rule is switched off to pass: a violation is fixed in the
site's CSS, templates or theme configuration, and a rule run differently (below) is
checked in another way in its place. A rule that can only report "minor" or
"moderate" findings, which fail no check, is not run at all (``_RUN``).

One rule is run differently on code and on math. A highlighted code block holds
thousands of tokens in a dozen colours, and axe's ``color-contrast`` lays out every
one of them (about 20 s per colour scheme on the largest page); KaTeX sets an
equation as dozens of spans in the colour of its paragraph (3,541 of the cost page's
5,673 elements). So axe checks contrast everywhere but inside ``.highlight`` blocks
and ``.katex`` math, and ``token_contrast_violations`` checks each distinct colour of
the code's tokens and the math's glyphs against the background it is drawn on, with
the WCAG formula axe uses (which takes a fifth off each page's colour checks).

Each check is one ``axe.run`` (axe is injected once per loaded document): axe builds
its model of the page (its flattened tree, and the layout grid both colour rules read)
once per run, a large part of a run on a large page. So ``color-contrast`` runs with
the other rules, its node filter (its ``matches``) narrowed to the nodes outside
``.highlight``: the nodes ``exclude: [".highlight"]`` left it, while every other rule
still sees the whole page.

A page's own visits (tests/browser/tour.py: every page, in both schemes) go one step
further. There axe's ``color-contrast`` still lays out every text node, 3-6 s of a
page's 4-8 s of checks on this site's pages, so ``page_violations`` runs every other
rule and checks each distinct colour of the page's text (prose, code, math, widgets)
the way ``token_contrast_violations`` checks code and math, in 0.2-0.5 s. And axe's
other colour rule, ``link-in-text-block`` (a link in a sentence, not underlined or
otherwise styled apart, must stand 3:1 from the text around it), is checked the same
way, by distinct pair of colours, in 0.02-0.24 s: axe's rule took up to 0.7 s of a
page's run, and the dark visit needs no axe run at all (one costs 0.5-0.9 s for that
rule alone, most of it axe's model of the page). What that
leaves out, text drawn over a background that is not its ancestor's, is left to axe's
own colour rules, which still run on the widgets (their tests) and on the site's
sidebars and one long page in each scheme (tests/browser/test_theme.py); planted
faults show that both find the same text and links (tests/browser/test_checks.py).
"""

from __future__ import annotations

import re

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

# The impacts that fail a test; "minor" and "moderate" findings are not blocking.
BLOCKING_IMPACTS = frozenset({"serious", "critical"})

# The rules whose outcome depends on the colour scheme, checked again in dark mode.
COLOUR_RULES = ("color-contrast", "link-in-text-block")

CODE = ".highlight"  # Pygments-highlighted code blocks
MATH = ".katex"  # KaTeX's math (what it draws: .katex-html; .katex-mathml is hidden)
# The text of each, checked by distinct colour instead of by axe, one kind at a time.
TOKENS = {
    "code": f"{CODE} code, {CODE} code *",
    "math": f"{MATH} .katex-html, {MATH} .katex-html *",
}
MIN_CONTRAST = 4.5  # WCAG AA for text below 18.66 px bold or 24 px (code is smaller)
LARGE_CONTRAST = 3.0  # WCAG AA for large text: at least 24 px, or 18.66 px and bold

_AXE = Axe()

# In the page: `layers(node)`, the backgrounds of a node and its ancestors from the
# root down (each element's looked up once), to be composited in Python.
_LAYERS = """
    const below = new Map();
    const layers = (node) => {
        if (!node) return [];
        if (!below.has(node))
            below.set(node, [...layers(node.parentElement),
                             getComputedStyle(node).backgroundColor]);
        return below.get(node);
    };"""

# For each code token or math glyph (and each block's plain text): its colour, its
# font, and the backgrounds below it (`_LAYERS`).
_TOKEN_COLOURS = (
    """([tokens, within]) => {
    const found = new Map();"""
    + _LAYERS
    + """
    const scope = [...document.querySelectorAll(within)];
    for (const el of document.querySelectorAll(tokens)) {
        if (!scope.some(s => s.contains(el))) continue;
        if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
            continue;  // only elements that draw text themselves
        if (el instanceof SVGElement) continue;  // drawn in its fill, not its colour
        if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true}))
            continue;  // nor text nobody sees (as axe): hidden, or fully transparent
        const box = el.getBoundingClientRect();
        if (box.right <= 0 || box.left >= innerWidth) continue;  // a drawer folded away
        const style = getComputedStyle(el);
        const under = layers(el);
        const key = [style.color, style.fontSize, style.fontWeight, ...under].join("|");
        if (!found.has(key))
            found.set(key, {color: style.color, layers: under, size: style.fontSize,
                            weight: style.fontWeight, example: el.className || el.tagName,
                            text: el.textContent.trim().slice(0, 20)});
    }
    return [...found.values()];
}"""
)

_RGBA = re.compile(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)")


def _rgba(css: str) -> tuple[float, float, float, float]:
    match = _RGBA.fullmatch(css.strip())
    if match is None:
        raise ValueError(f"colour: expected rgb() or rgba(), got {css!r}")
    r, g, b, a = match.groups()
    return float(r), float(g), float(b), 1.0 if a is None else float(a)


def _over(top: tuple[float, ...], below: tuple[float, ...]) -> tuple[float, ...]:
    """``top`` composited over the opaque colour ``below``."""
    alpha = top[3]
    mixed = (
        alpha * t + (1 - alpha) * b for t, b in zip(top[:3], below[:3], strict=True)
    )
    return (*mixed, 1.0)


def _luminance(rgb: tuple[float, ...]) -> float:
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(
    foreground: str, layers: list[str], other: str | None = None
) -> float:
    """WCAG contrast of the CSS colour ``foreground`` drawn on ``layers`` (root first)
    against the layers themselves, or against ``other`` drawn on them.

    ```python
    from tests.browser.accessibility import contrast_ratio

    assert round(contrast_ratio("rgb(0, 0, 0)", ["rgb(255, 255, 255)"]), 1) == 21.0
    assert contrast_ratio("rgb(0, 0, 0)", ["rgb(0, 0, 0)"], "rgb(0, 0, 0)") == 1.0
    ```
    """
    background = (255.0, 255.0, 255.0, 1.0)  # the canvas under the root
    for layer in layers:
        background = _over(_rgba(layer), background)
    text = _over(_rgba(foreground), background)
    against = background if other is None else _over(_rgba(other), background)
    light, dark = sorted((_luminance(text), _luminance(against)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _needed(token: dict) -> float:
    """The contrast WCAG AA asks of a token's text: less for large text."""
    size, bold = float(token["size"].removesuffix("px")), int(token["weight"]) >= 700
    return LARGE_CONTRAST if size >= 24 or (bold and size >= 18.66) else MIN_CONTRAST


def _contrast_lines(page: Page, kinds: dict[str, str], within: str) -> list[str]:
    return [
        f"{kind} contrast {ratio:.2f} < {needed}: {token['color']} "
        f"({token['example']}, e.g. {token['text']!r}) on {token['layers'][-1]}"
        for kind, tokens in kinds.items()
        for token in page.evaluate(_TOKEN_COLOURS, [tokens, within])
        if (ratio := contrast_ratio(token["color"], token["layers"]))
        < (needed := _needed(token))
    ]


# For each link in a block of text that is styled like the text around it (as axe's
# link-in-text-block selects them): its colour, the text's, and the backgrounds below.
_LINK_COLOURS = (
    """() => {
    const found = new Map();"""
    + _LAYERS
    + """
    const inline = (el) => getComputedStyle(el).display.startsWith("inline");
    const differ = (link, block) => {  // axe's test of a link styled apart
        const a = getComputedStyle(link), b = getComputedStyle(block);
        const drawn = (side) => a.getPropertyValue(`${side}-style`) !== "none"
            && parseFloat(a.getPropertyValue(`${side}-width`)) > 0
            && !/rgba\\(.*, 0\\)$/.test(a.getPropertyValue(`${side}-color`));
        return a.backgroundImage !== "none"
            || ["border-bottom", "border-top", "outline"].some(drawn)
            || a.fontFamily.split(",")[0] !== b.fontFamily.split(",")[0]
            || ["text-decoration-line", "text-decoration-style", "font-weight",
                "font-style", "font-size"].some(
                    (p) => a.getPropertyValue(p) !== b.getPropertyValue(p));
    };
    // axe's test of a link in a block of text: in the run of the block's text that
    // holds the link (between block-level children), more text than in its widgets
    const WIDGETS = "a[href], [role=link], button, input, select, textarea";
    const inText = (block, link) => {
        let text = "", widgets = "", seen = 0;  // 0: before the link, 1: after, 2: done
        const walk = (node) => {
            if (seen === 2) return;
            if (node.nodeType === 3) text += node.nodeValue;
            if (node.nodeType !== 1) return;
            if (node === link) seen = 1;
            if (node !== block && (!inline(node) || ["BR", "HR"].includes(node.nodeName))) {
                if (seen === 0) text = widgets = "";
                else seen = 2;
                return;
            }
            if (node !== block && node.matches(WIDGETS)) widgets += node.textContent;
            else node.childNodes.forEach(walk);
        };
        walk(block);
        const squeeze = (words) => words.replace(/\\s+/g, " ").trim();
        return squeeze(text).length > squeeze(widgets).length;
    };
    for (const link of document.querySelectorAll("a[href], [role=link]")) {
        const own = link.innerText.trim();
        if (!own || getComputedStyle(link).display !== "inline") continue;
        if (!link.checkVisibility({opacityProperty: true, visibilityProperty: true}))
            continue;
        let block = link.parentElement;
        while (block && inline(block)) block = block.parentElement;
        if (!block || !inText(block, link) || differ(link, block)) continue;
        const color = getComputedStyle(link).color;
        const text = getComputedStyle(block).color;
        const under = layers(link);
        const key = [color, text, ...under].join("|");
        if (!found.has(key))
            found.set(key, {color, text, layers: under, example: own.slice(0, 20)});
    }
    return [...found.values()];
}"""
)
LINK_CONTRAST = 3.0  # WCAG 1.4.1, as axe: a link told apart by colour alone


def link_contrast_violations(page: Page) -> list[str]:
    """Links in a block of text on ``page`` that only their colour tells apart, with
    less than 3:1 contrast to the text around them: one line per pair of colours."""
    return [
        f"link contrast {ratio:.2f} < {LINK_CONTRAST}: {link['color']} in text of "
        f"{link['text']} (e.g. {link['example']!r}) on {link['layers'][-1]}"
        for link in page.evaluate(_LINK_COLOURS)
        if (ratio := contrast_ratio(link["color"], link["layers"], link["text"]))
        < LINK_CONTRAST
    ]


def token_contrast_violations(page: Page, within: str = ":root") -> list[str]:
    """Colours of code tokens and math glyphs on ``page`` (in the elements ``within``
    selects) below WCAG AA contrast, one line per colour."""
    return _contrast_lines(page, TOKENS, within)


def page_violations(page: Page, rules: tuple[str, ...] | None = None) -> list[str]:
    """Serious or critical findings on ``page``, one line per element or colour:
    axe's ``rules`` (``None``: every rule) but its two colour rules, and in their place
    the contrast of each distinct colour of text (every element that draws text) on
    the backgrounds below it, as ``token_contrast_violations`` checks code and math,
    and of each link's colour to its text's (``link_contrast_violations``). With only
    the colour rules asked for, axe is not run."""
    options: dict = {"rules": {rule: {"enabled": False} for rule in COLOUR_RULES}}
    named = None if rules is None else [r for r in rules if r not in COLOUR_RULES]
    if named is not None:  # runOnly would run a rule it names, disabled or not
        options["runOnly"] = {"type": "rule", "values": named}
    found = _axe(page, options, None) if named is None or named else []
    return (
        found
        + _contrast_lines(page, {"text": "*"}, ":root")
        + link_contrast_violations(page)
    )


# Narrows color-contrast to the nodes outside code blocks and math, once per document
# (the wrapped rule is marked).
_PREPARE = """(skipped) => {
    const rule = axe.utils.getRule("color-contrast");
    if (!rule.outsideTokens) {
        const matches = rule.matches;
        rule.matches = function (node, virtualNode, context) {
            return !node.closest(skipped) && matches.call(this, node, virtualNode, context);
        };
        rule.outsideTokens = true;
    }
}"""
# A rule that can report only "minor" or "moderate" findings is not run: it could
# never fail a check. axe gives every finding of a rule the rule's own impact (each
# rule of axe 4 declares one), and `test_a_rule_left_out_finds_nothing_that_blocks`
# holds that to a page planted with their faults. Left out: 28 of the 96 rules axe
# 4.12 enables, `region` among them (one of its costliest); a page's first run takes
# a fifth to a third less time.
_RUN = """([within, options, blocking]) => {
    const rules = {...options.rules};
    for (const rule of axe._audit.rules)
        if (rule.impact && !blocking.includes(rule.impact) && !(rule.id in rules))
            rules[rule.id] = {enabled: false};
    return axe.run(within ?? document, {...options, rules})
        .then((results) => results.violations);
}"""


def _axe(page: Page, options: dict, within: str | None) -> list[str]:
    if not page.evaluate("() => typeof window.axe?.run === 'function'"):
        page.evaluate(_AXE.axe_script)
    page.evaluate(_PREPARE, f"{CODE}, {MATH}")
    violations = page.evaluate(
        _RUN,
        [within, {"resultTypes": ["violations"], **options}, sorted(BLOCKING_IMPACTS)],
    )
    return [
        f"{violation['id']} ({violation['impact']}): {violation['help']}; "
        f"at {' '.join(node['target'])}: {node['failureSummary']}"
        for violation in violations
        if violation["impact"] in BLOCKING_IMPACTS
        for node in violation["nodes"]
    ]


def blocking_violations(
    page: Page, rules: tuple[str, ...] | None = None, within: str | None = None
) -> list[str]:
    """Serious or critical axe violations on ``page``, one line per element.

    ``rules`` limits the check to those axe rule ids; ``None`` runs every rule.
    ``within`` (a CSS selector) limits it to the elements it selects and what they
    hold (a widget: axe's cost grows with the elements it looks at); ``None`` checks
    the whole page. Colour contrast inside code blocks and math is checked by
    ``token_contrast_violations``.
    """
    options = {} if rules is None else {"runOnly": {"type": "rule", "values": rules}}
    found = _axe(page, options, within)
    if rules is None or "color-contrast" in rules:
        found += token_contrast_violations(page, within or ":root")
    return found
