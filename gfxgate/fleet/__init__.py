"""The fleet: `doctor` on every node of a Slurm cluster, gathered into one table, and the sweep as a job array.

``jobs.py`` writes the batch scripts (pure text; ``host/slurm.py`` submits them), ``model.py`` reads what the
nodes wrote into the shared folder and builds the node x GPU x backend table, ``render.py`` formats it,
``worklogs.py`` plans a sweep's array tasks and merges their worklogs through ``sweep/worklog.py``.
"""
