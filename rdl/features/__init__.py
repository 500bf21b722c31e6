"""What the model and the baselines know of a seed's past, in one package: the statistics of
its visible labels (``labels.py``), a leak-free feature table of its entity, label history
and child tables (``table.py``), the model's seed features built from it (``seed.py``),
deep feature synthesis to depth 2 (``synthesis.py``, ``deep.py``), and every feature's
name, readable and as LightGBM stores it (``names.py``). Nothing here reads a row or a
label from after the seed's time.
"""
