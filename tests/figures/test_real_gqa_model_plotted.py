"""The real grouped-query model's figure draws the study's perplexities under their
own labels: a bar per layer, the published model and every layer converted."""

from __future__ import annotations

from mha.figures.plotted import plotted
from mha.pages.real_gqa_model import page
from tests.figures.from_page import draw


def test_mqa_by_layer_draws_each_layers_perplexity_and_the_two_references():
    study = page().study
    (panel,) = plotted(draw(page(), "mqa_by_layer"))
    assert panel.bars["MQA in this layer only"].tolist() == list(
        study.mqa_layer_perplexity
    )
    every = panel.lines["MQA in every layer at once"][1]
    published = panel.lines["as published (3 K/V heads)"][1]
    assert every.tolist() == [study.mqa_perplexity] * 2
    assert published.tolist() == [study.perplexity] * 2
    assert panel.xticks == [str(i) for i in range(len(study.mqa_layer_perplexity))][::3]
