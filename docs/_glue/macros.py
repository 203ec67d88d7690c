"""mkdocs-macros glue: expose the core's results and number formatters to the pages.

Thin by design: every number is computed in ``src/mha``; this module only names
things. Pages write ``{{ cricket.head_a.weights[0] | dec }}`` or
``{{ figure("cricket") }}``.
"""

from mha import accounting, formatting
from mha.figures import to_svg
from mha.figures.cricket import three_distributions
from mha.worked import cricket

FIGURES = {
    "cricket": (
        lambda: three_distributions(cricket.solve()),
        'Attention weights of "his" over Kohli, his and century: the single '
        "full-width head splits its weight between Kohli and his, head A puts most "
        "of it on Kohli, head B puts the most on his and a part on century.",
    ),
}


def define_env(env):
    """Called by mkdocs-macros once per build."""
    env.variables["cricket"] = cricket.solve()
    tripled = cricket.V.copy()
    tripled[2] *= 3
    env.variables["cricket_tripled"] = cricket.solve(v=tripled)
    env.variables["cricket_tokens"] = cricket.TOKENS
    env.variables["accounting"] = accounting
    n, d_model, heads = cricket.COST_N, cricket.COST_D_MODEL, cricket.COST_HEADS
    env.variables["cost"] = {
        "n": n,
        "d_model": d_model,
        "heads": heads,
        "one_head": accounting.score_multiply_adds(n, d_model, 1),
        "many_heads": accounting.score_multiply_adds(n, d_model, heads),
    }

    env.filter(formatting.decimals, "dec")
    env.filter(formatting.percent, "pct")
    env.filter(formatting.thousands, "thousands")
    env.filter(formatting.vector, "vec")

    @env.macro
    def figure(name: str) -> str:
        """An inline SVG figure drawn by the core, with its alt text and caption."""
        draw, alt = FIGURES[name]
        return f'<figure class="mha">{to_svg(draw(), alt)}</figure>'
