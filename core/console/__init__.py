"""The Console: a local web app over the same records, and the same JSON, the CLI prints (docs/console.md).

``app`` builds the Starlette app (its routes, the token and CSRF checks); ``views`` turns records into
what each page shows (the data a page's JSON twin returns); ``transcript`` reads a Trial's Session
trace as a transcript and a timeline; ``change`` shows the change a Trial committed as a diff (built in a grading sandbox);
``serve`` runs it on trio under Hypercorn. It never starts an Experiment or a Scoring run.
"""
