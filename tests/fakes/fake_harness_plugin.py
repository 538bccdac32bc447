"""A fake Harness plugin loaded through ASSAY_PLUGINS (nothing installed)."""

from assay import hookimpl


class FakeHarness:
    name = "fake"
    provider_hosts = ("fake.invalid",)


@hookimpl
def assay_harnesses():
    return [FakeHarness()]
