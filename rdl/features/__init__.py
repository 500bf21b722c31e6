"""What the model and the baselines know of a seed's past, in one package: the statistics of
its visible labels (``labels.py``), a leak-free feature table of its entity, label history
and child tables (``table.py``), the model's seed features built from it (``seed.py``),
and the tree prior, LightGBM's forward-chained prediction the model corrects
(``prior.py``). Nothing here reads a row or a label from after the seed's time.
"""
