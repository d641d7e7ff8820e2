"""The vocabulary of planted edits: what each error type's edit may change. Read by the operators that plant
the errors (tasks/construct) and by the pair verifier of the `pairs` contract (data_contracts), so the two
cannot disagree about what an error of a type is."""

from __future__ import annotations

import re

# Pairs of phrases whose swap reverses a relation, a conclusion or an inequality.
_REVERSAL_PAIRS = [
    ("does not follow", "follows"),
    ("is not eligible", "is eligible"),
    ("does not meet", "meets"),
    ("does not apply", "applies"),
    ("does not need to", "should"),
    ("invalid", "valid"),
    ("more than", "less than"),
    ("above", "below"),
    ("increases", "decreases"),
    ("larger", "smaller"),
    ("longer", "shorter"),
    ("higher", "lower"),
    ("sink", "float"),
    ("answer is yes", "answer is no"),
]
REVERSALS = {a: b for a, b in _REVERSAL_PAIRS} | {b: a for a, b in _REVERSAL_PAIRS}
# Hedges and the wider claim each becomes: scope widened, certainty added, caveat dropped.
OVERCLAIMS = {
    "usually": "always",
    "typically": "always",
    "generally": "always",
    "often": "always",
    "in most cases": "in every case",
    "about": "exactly",
    "roughly": "exactly",
    "can sometimes": "will always",
    "can": "will",
    "may": "will",
    "likely": "certain",
}
# the Hard-Constructed branch widens a little less: still beyond what holds, harder to notice
SUBTLE_OVERCLAIMS = {
    "usually": "almost always",
    "typically": "nearly always",
    "generally": "almost always",
    "often": "nearly always",
    "in most cases": "in nearly all cases",
    "about": "precisely",
    "roughly": "precisely",
    "can sometimes": "will almost always",
    "can": "will almost certainly",
    "may": "will almost certainly",
    "likely": "almost certain",
}
# a number token (not part of a word or of a longer decimal)
NUMBER_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w]|\.\d)")
