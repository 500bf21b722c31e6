"""rdl's Hydra configs. Hydra reads a package's configs (``pkg://rdl.conf``, as the console
scripts ``rdl-train`` and ``rdl-predict`` do) only from a folder with an ``__init__.py``."""
