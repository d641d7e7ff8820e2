"""People in the loop: the annotation page (server.py, page.html, page.js) over an audit's items (items.py), and
the durable label log it writes (log.py)."""

from judgeops.tasks.labelling.items import Audit, display_order, from_tables
from judgeops.tasks.labelling.log import import_table, latest

__all__ = ["Audit", "display_order", "from_tables", "import_table", "latest"]
