"""Sentences written for this project, in triples, to probe a real model.

Each triple: a sentence, a paraphrase in other words, and a decoy sharing its key word
in another sense (a river bank, a cricket duck), which a model matching words would
retrieve. The first two open with the site's two seed sentences.
"""

from __future__ import annotations

CRICKET = (
    "Kohli, who anchored the innings after Rohit fell early, finally reached his "
    "century in the 47th over."
)
CAT = "the cat sat on the warm mat ."
SEEDS = (CRICKET, CAT)

# (sentence, paraphrase, decoy)
TRIPLES: tuple[tuple[str, str, str], ...] = (
    (
        CRICKET,
        "After Rohit's early dismissal, Kohli held the innings together and "
        "completed his hundred in the 47th over.",
        "The old fort, finished over a century ago, anchored the town after the "
        "empire fell.",
    ),
    (
        CAT,
        "a kitten was lying on the heated rug .",
        "the warm mat was on sale, the sign on the shop said .",
    ),
    (
        "He went to the bank to pay in his wages.",
        "He visited the branch to deposit his salary.",
        "He went down to the river bank to fish.",
    ),
    (
        "The batter hit the ball over the boundary.",
        "The batsman struck a six.",
        "She mixed the batter in a big bowl before baking.",
    ),
    (
        "The pitch was dry and cracked by the final day.",
        "By day five the playing surface had broken up.",
        "The salesman's pitch to the investors fell flat on the final day.",
    ),
    (
        "The bat flew out of the cave at dusk.",
        "At nightfall the small winged mammal left its cave.",
        "He dropped his bat and walked out of the crease.",
    ),
    (
        "She saw a duck swimming on the pond.",
        "A water bird was paddling across the pond.",
        "He was out for a duck on the first ball.",
    ),
    (
        "The crane lifted the steel beam onto the roof.",
        "The machine hoisted a girder up onto the top of the building.",
        "A crane stood in the marsh, hunting for fish.",
    ),
    (
        "The spring in the old mattress was broken.",
        "A coil inside the worn-out bed had snapped.",
        "In spring the old gardens were full of flowers.",
    ),
    (
        "They needed a match to light the fire.",
        "They struck a matchstick to get the fire going.",
        "They won the match by six wickets.",
    ),
    (
        "The seal slept on the warm rocks.",
        "A marine mammal dozed on the sun-heated stones.",
        "The letter's seal was still warm from the wax.",
    ),
    (
        "He scored a goal in the final minute.",
        "In the last moments of the game he found the net.",
        "His goal for the final year is to find a job.",
    ),
)


def sentences() -> tuple[str, ...]:
    """Every sentence, triple by triple: sentence, paraphrase, decoy.

    ```python
    from mha.experiments.corpus import SEEDS, TRIPLES, sentences

    assert sentences()[:1] == SEEDS[:1] and len(sentences()) == 3 * len(TRIPLES) >= 30
    ```
    """
    return tuple(text for triple in TRIPLES for text in triple)


def retrieval_queries() -> tuple[tuple[int, int], ...]:
    """``(query, answer)`` indices into ``sentences()``: each sentence and its
    paraphrase find each other; decoys are never queries.

    ```python
    from mha.experiments.corpus import retrieval_queries

    assert retrieval_queries()[:2] == ((0, 1), (1, 0))
    ```
    """
    pairs = ((3 * i, 3 * i + 1) for i in range(len(TRIPLES)))
    return tuple(query for a, b in pairs for query in ((a, b), (b, a)))
