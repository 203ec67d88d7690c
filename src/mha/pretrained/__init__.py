"""Real trained models run in NumPy on the core's attention, and probes of their heads.

- ``mha.pretrained.minilm``: all-MiniLM-L6-v2, a 6-layer, 12-head BERT sentence encoder.
- ``mha.pretrained.smollm2``: SmolLM2-135M-Instruct, a grouped-query decoder.
"""
