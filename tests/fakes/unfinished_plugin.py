"""A plugin that registers a Grader it marks as not yet implemented."""

from assay import hookimpl
from assay.hooks.protocols import NotYetImplemented


class Someday:
    name = "someday"
    implemented = False

    async def grade(self, task, trials, context):
        raise NotYetImplemented("the grader 'someday' is not yet implemented")


@hookimpl
def assay_graders():
    return [Someday()]
