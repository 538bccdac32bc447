"""The Console: a local web app over the same records, and the same JSON, the CLI prints (docs/console.md).

``app`` builds the Starlette app (its routes, the token and CSRF checks); ``views`` turns records into
what each page shows (the data a page's JSON twin returns); ``stream`` reads a session's stream for
people; ``serve`` runs it on trio under Hypercorn. It never starts an Experiment or a Scoring run.
"""
