"""Admitted usage and the limits it is checked against: queues and FederatedResourceQuotas.

Fed by the scheduling cycle (admissions, releases, victims) and by the controller when a
workload finishes or is deleted; feeds admission checks, fair share and reclaim. Kept apart
from the pending store (`federation.queue`) on purpose.
"""

from __future__ import annotations

__all__: list[str] = []
