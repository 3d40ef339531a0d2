"""A workload's queue reference (`fedctl.io/queue`) must be a name a Queue can have: one no
Queue can ever answer waited for ever, and each distinct value (20,000 characters, quotes,
markup) became a row of every queue view and a label of the unauthenticated /metrics.
Refused at its line, as a Queue of that name is."""

from __future__ import annotations

import pytest

from policies.loading import load_text

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  annotations:
    fedctl.io/queue: {queue}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox}}]
"""


@pytest.mark.parametrize(
    ("queue", "shown"),
    [
        pytest.param("'Bad\"Queue<b>x</b>'", "'Bad\"Queue<b>x</b>'", id="quotes and markup"),
        pytest.param("ML_Research", "'ML_Research'", id="upper case and underscore"),
        pytest.param("q" + "x" * 20000, "'q" + "x" * 59 + "... (20001 characters)'", id="huge"),
    ],
)
def test_a_queue_reference_no_queue_can_have_is_refused_at_its_line(queue: str, shown: str) -> None:
    result = load_text(JOB.format(queue=queue), filename="job.yaml")
    assert [str(f) for f in result.errors] == [
        f'job.yaml:7:22: metadata.annotations["fedctl.io/queue"]: invalid queue name {shown}: use'
        " lower-case letters, digits, '-' and '.', starting and ending with a letter or"
        " digit, at most 253 (e.g. ml-research)"
    ]


def test_a_valid_queue_reference_is_taken() -> None:
    result = load_text(JOB.format(queue="ml-research"), filename="job.yaml")
    assert not result.errors and [o.model.kind for o in result.objects] == ["Job"]
