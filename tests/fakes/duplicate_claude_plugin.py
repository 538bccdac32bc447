"""A plugin that offers a Harness named like a built-in one: a clear conflict."""

from assay import hookimpl


class AnotherClaude:
    name = "claude"
    provider_hosts = ()


@hookimpl
def assay_harnesses():
    return [AnotherClaude()]
