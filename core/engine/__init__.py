"""The Experiment engine: from ``assay experiment`` to ``verdict.json``.

``start`` plans an Experiment (everything checked before the first Trial) and runs it; ``arms``
resolves the Baseline and Candidate; ``factory`` reads the user's Factory and builds each commit
once; ``touched`` picks the Eval suites a change touches; ``release`` is release mode (the last
release tag as the Baseline, what a paused Experiment's limit said); ``runner`` runs Trials on trio workers
(void re-runs, plan-limit pauses, Stop) and grades them; ``folder`` is an Experiment's folder
(identity, Bar check, attempts, Scores); ``results`` turns Scores into per-task pairs and the
Verdict. It knows no screen: progress reaches the CLI through a callback.
"""
