"""Reading a verdict out of a judge's text: the letter (A/B) or the word (yes/no) the protocol asked for.

A structured reply comes first: a JSON object with a `verdict` (or `answer`, `choice`, `winner`) field, as a
backend's structured output or tool call returns it (tasks/judges/structured.py asks for one). Prose is read
last, as a set of statements, each about one candidate:

- an opening verdict: the reply starts with the letter alone, or followed by punctuation, a line break or
  "is": `B`, `(A)`, `**B**.`, `A: the first answer…`; a sentence that is a letter alone (`… A.`);
- a label: `Answer: B`, `Final verdict - (A)`, `the better one is a.` (a lower-case letter only where it
  ends the sentence there: elsewhere "a" is an article);
- a predicate: `B is correct`, `A is better than B`, `B is wrong / incorrect / flawed / worse`,
  `B) contains an error`, `the error is in B`, `the incorrect answer is A`; `not` turns it round;
- a choice: `I choose B`, `I would not pick B`.

A statement against a candidate is one for the other. Where every statement names the same winner, that is
the verdict. Where they disagree, the last concluding statement decides ("…, but B is correct", "so the answer
is A", a `Final answer:` label); with none, the reply is unparsable — recorded as an abstention with its reason,
never guessed. A statement inside a condition or a contrast ("if A is right", "neither A nor B is correct",
"while A is correct") is not one. Full-width letters and the Cyrillic and Greek capitals that look like A and
B are read as A and B, and a few labels and predicates in German, French, Spanish, Portuguese, Chinese,
Japanese and Russian are known.

Written here, not taken from a library: the graders of inspect_ai and promptfoo read a fixed pattern or ask
a model; none reads negation and ordering in a two-candidate verdict.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

_HOMOGLYPHS = str.maketrans({"А": "A", "В": "B", "Б": "B", "Α": "A", "Β": "B", "’": "'"})
_CONTRACTED = re.compile(r"(?i)\b(is|was|does|did|do|would|could|should|ca|wo)n't\b")  # "isn't" → "is not"
_MARKUP = re.compile(r"[*`#]+|(?<!\w)_+|_+(?!\w)|</?(?i:answer|verdict|choice|output|final)>")

_LABEL = (
    r"(?i:(?:(?:my|the|our)\s+)?(?:final\s+|overall\s+)?(?:answer|verdict|choice|decision|judg(?:e)?ment|"
    r"output|response|option|selection|pick|winner|result|conclusion|preference|"
    r"antwort|urteil|entscheidung|wahl|réponse|reponse|verdicto|veredicto|respuesta|resposta|elección|"
    r"escolha|choix|ответ|выбор|答案|回答|判定|结论|結論|选择|選択|判断))"
)
_NOUN = (
    r"(?i:(?:answer|response|output|option|candidate|assistant|choice|antwort|réponse|respuesta|resposta|"
    r"ответ|回答|答案)\s*)?"
)
_LETTER = r"[\[(]{0,2}([AB])[\])]{0,2}(?![A-Za-z0-9])"
_CAND = rf"(?<![A-Za-z0-9]){_NOUN}{_LETTER}"  # "B", "(A)", "Answer B", "Response (A)"
_COPULA = r"(?i:(?:seems|appears)\s+to\s+be|is|was|seems|appears|looks|remains|ist|est|es|é|是|は|が)"  # "B is", "B ist", "B是"
_NOT = r"(?i:\s*(?:not|n't|nicht|pas|no|不|не)(?![a-z]))"
_ADV = (
    r"(?i:\s*(?:clearly|definitely|actually|certainly|also|indeed|obviously|much|far|slightly|the|a|an)\b)*"
)
_GOOD = (
    r"(?i:better|best|correct|right|accurate|preferred|preferable|stronger|superior|winner|winning\s+one|"
    r"more\s+(?:accurate|correct|helpful|precise|reliable)|besser|richtig|korrekt|meilleure?|correcte?|"
    r"juste|mejor|correcta|melhor|правильн\w*|лучше|正确|正確|更好|较好|より良い|正しい)"
)
_BAD = (
    r"(?i:worse|worst|wrong|incorrect|flawed|erroneous|inaccurate|mistaken|inferior|weaker|invalid|"
    r"faulty|problematic|misleading|less\s+(?:accurate|correct|helpful|precise|reliable)|"
    r"not\s+as\s+(?:good|accurate|correct|strong)|falsch|fehlerhaft|fausse?|incorrecte?|erróne[ao]|"
    r"incorrect[ao]|errad[ao]|неправильн\w*|неверн\w*|错误|錯誤|間違い|误)"
)
_FAULT = r"(?i:errors?|mistakes?|flaws?|bugs?|miscalculations?|inaccurac(?:y|ies)|problems?|issues?)"
_HAS = r"(?i:contains?|has|have|makes?|made|introduces?|includes?|commits?)"
_QUALIFY = r"(?i:\s+(?:an?|one|the|several|some|two|a\s+few|[a-z]+al|critical|subtle|small|major|serious))*"
_CHOOSE = (
    r"(?i:choose|chose|chosen|pick|picked|prefer|preferred|select|selected|go\s+with|going\s+with|"
    r"vote\s+for|recommend|favou?r|side\s+with|wähle|choisis|elijo|escolho|выбираю|选择?|選ぶ)"
)
_NEGATED_CHOICE = r"(?i:(?:not|n't|never|cannot|can't|won't|wouldn't)(?:\s+\w+){0,2}\s+)$"
_TAIL = r"(?=\s*(?:[.!。:;,)\]\n]|$|(?i:because|since|as|–|—|-)))"
_LOWER_END = r"\(?([ab])\)?(?=\s*(?:[.!。)\]]|\n|$))"  # a lower-case letter that ends its sentence

# "B is", "A) is", "B: ", "B更好" (no copula before a CJK predicate); never "A correct answer would…"
_LINK = rf"(?:\s*{_COPULA}(?![a-z])|\s*[:–—-]|(?=\s*[\u3000-\u9fff]))"
_PREDICATE = re.compile(
    rf"{_CAND}{_LINK}(?P<neg>{_NOT})?{_ADV}\s*(?:(?P<good>{_GOOD})|(?P<bad>{_BAD}))(?![a-z])"
)
_WINS = re.compile(rf"{_CAND}\s+(?i:wins|prevails|is\s+the\s+winner)\b")
_NONE = r"(?P<none>\s+(?i:no|zero|not\s+any))"
_HAS_FAULT = re.compile(
    rf"{_CAND}\s*(?:(?i:does|did)\s*)?(?P<neg>{_NOT})?\s*{_HAS}{_NONE}?{_QUALIFY}(?:\s+\w+)?\s+{_FAULT}"
)
_FAULT_IN = re.compile(rf"{_FAULT}\s+(?i:is\s+|lies\s+)?(?i:in|with)\s+{_CAND}")
_WHICH = r"(?i:answer|response|one|option|choice|candidate|答案|回答)"
# "the better answer is A", "Correct answer: B", "the better one is a.", "the incorrect one is B"
_GOOD_IS = re.compile(
    rf"(?<![A-Za-z])(?:{_GOOD})\s*{_WHICH}\s*(?i:is|:|=|-|是|は)\s*(?:{_CAND}|{_LOWER_END})"
    rf"|(?i:\bthe\s+)(?:{_GOOD})\s+(?i:is)\s*(?:{_CAND}|{_LOWER_END})"
)
_BAD_IS = re.compile(
    rf"(?<![A-Za-z])(?:{_BAD})\s*{_WHICH}\s*(?i:is|:|=|-|是|は)\s*(?:{_CAND}|{_LOWER_END})"
    rf"|(?i:\bthe\s+)(?:{_BAD})\s+(?i:is)\s*(?:{_CAND}|{_LOWER_END})"
)
_LABELLED = re.compile(rf"{_LABEL}\s*(?i:is|:|：|=|-|–|是|は)\s*(?:{_CAND}|{_LOWER_END})")
_CHOICE = re.compile(rf"{_CHOOSE}\s+{_CAND}")
_OPENING = re.compile(rf"^\W*{_LETTER}(?=\s*[^\w\s]|\s*$|\s*\n|\s+(?i:is|wins)\b)")
_SO = re.compile(
    rf"(?i:\b(?:so|therefore|thus|hence|ergo|clearly|definitely|overall|ultimately|it\s+is|it's|that\s+is|"
    rf"it\s+must\s+be|(?:I\s+would|I'd|I)\s+say|I\s+think|I\s+believe)),?\s*{_LETTER}\s*[.!]?\s*(?=\n|$)"
)
_ALONE = re.compile(r"(?:^|(?<=[.!?\n]))\s*\(?([AB])\)?\s*[.!]?\s*(?=\n|$)")
_CONCLUDING = re.compile(
    r"(?i:\b(?:so|therefore|thus|hence|overall|in\s+conclusion|in\s+summary|ultimately|but|however|"
    r"finally|final|in\s+the\s+end|on\s+balance|all\s+in\s+all|instead)\b)"
)
_HEDGE = re.compile(
    r"(?i:\b(?:if|whether|unless|while|whilst|although|though|whereas|neither|nor|either|or|both|assuming|"
    r"suppose|supposing)\s+(?:\w+\s+){0,3}$)"
)
_SENTENCE_START = re.compile(r"[.!?;\n。]")


@dataclass(frozen=True)
class _Statement:
    at: int  # where it starts in the reply
    winner: str  # the candidate it speaks for
    letter_at: int  # where its letter is: a label and a predicate on the same letter are one statement
    concluding: bool
    label: bool = False


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_HOMOGLYPHS)
    return _CONTRACTED.sub(r"\1 not", _MARKUP.sub("", text).replace("\r", ""))


def _other(letter: str) -> str:
    return "B" if letter == "A" else "A"


def _letter(m: re.Match) -> tuple[str, int]:
    for i in range(1, (m.lastindex or 0) + 1):
        if m.group(i) and m.group(i).upper() in ("A", "B") and len(m.group(i)) == 1:
            return m.group(i).upper(), m.start(i)
    raise ValueError(m.group(0))


def _sentence_before(text: str, at: int) -> str:
    starts = [m.end() for m in _SENTENCE_START.finditer(text, 0, at)]
    return text[starts[-1] if starts else 0 : at]


def _statements(text: str) -> list[_Statement]:
    found: list[_Statement] = []

    def add(m: re.Match, *, against: bool = False, label: bool = False) -> None:
        letter, letter_at = _letter(m)
        before = _sentence_before(text, m.start())
        if _HEDGE.search(before):  # "if A is right", "neither A nor B is correct"
            return
        winner = _other(letter) if against else letter
        concluding = label and _LABEL_FINAL.search(m.group(0)) is not None
        found.append(
            _Statement(m.start(), winner, letter_at, concluding or bool(_CONCLUDING.search(before)), label)
        )

    for m in _PREDICATE.finditer(text):
        add(m, against=(m.group("bad") is not None) != (m.group("neg") is not None))
    for m in _WINS.finditer(text):
        add(m)
    for m in _HAS_FAULT.finditer(text):
        add(m, against=(m.group("neg") is None) == (m.group("none") is None))  # "A has no error": for A
    for m in _FAULT_IN.finditer(text):
        add(m, against=True)
    for m in _GOOD_IS.finditer(text):
        add(m, label=True)
    for m in _BAD_IS.finditer(text):
        add(m, against=True, label=True)
    for m in _CHOICE.finditer(text):
        add(m, against=bool(re.search(_NEGATED_CHOICE, text[max(0, m.start() - 40) : m.start()])))
    predicated = {s.letter_at for s in found}
    for m in _LABELLED.finditer(text):
        if _letter(m)[1] not in predicated:  # "Answer: B is flawed" is the predicate's, not a label's
            add(m, label=True)
    predicated = {s.letter_at for s in found}
    for pattern in (_OPENING, _ALONE, _SO):
        for m in pattern.finditer(text):
            if m.start(1) not in predicated:
                found.append(_Statement(m.start(), m.group(1), m.start(1), pattern is not _OPENING))
                predicated.add(m.start(1))
    return sorted(found, key=lambda s: s.at)


_LABEL_FINAL = re.compile(r"(?i:final|overall|conclusion|verdict|winner)")


def _decide(statements: list[_Statement]) -> str | None:
    winners = {s.winner for s in statements}
    if len(winners) == 1:
        return winners.pop()
    concluding = [s for s in statements if s.concluding]
    return concluding[-1].winner if concluding else None


def _json_object(text: str | None) -> dict | None:
    """The JSON object a reply is (bare or in a ```json fence), else None."""
    if not text or "{" not in text:
        return None
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _choice_in(data: dict, choices: tuple[str, ...]) -> str | None:
    for field in ("verdict", "answer", "choice", "winner", "better"):
        value = data.get(field)
        if isinstance(value, bool) and choices == ("yes", "no"):
            return "yes" if value else "no"
        if isinstance(value, str):
            wanted = {c.lower(): c for c in choices}
            value = _normal(value).strip(" ().").lower()
            if value in wanted:
                return wanted[value]
    return None


def read_structured(text: str | None, choices: tuple[str, ...]) -> str | None:
    """The choice a JSON reply names in its `verdict` (or `answer`, `choice`, `winner`) field, else None."""
    data = _json_object(text)
    return None if data is None else _choice_in(data, choices)


def read_structured_verdict(text: str | None) -> tuple[str, str | None] | None:
    """(A or B, the rationale field) of a JSON verdict reply, else None (the prose reader takes over)."""
    data = _json_object(text)
    verdict = None if data is None else _choice_in(data, ("A", "B"))
    if verdict is None:
        return None
    rationale = data.get("rationale")
    return verdict, rationale if isinstance(rationale, str) else None


def read_letter(text: str | None) -> tuple[str, str] | None:
    """(the verdict letter, the rest of the reply: what follows an opening verdict, else the whole text) or None
    when the reply names none or no decidable one."""
    if not text:
        return None
    structured = read_structured(text, ("A", "B"))
    if structured:
        return structured, text
    normal = _normal(text)
    statements = _statements(normal)
    verdict = _decide(statements) if statements else None
    if verdict is None:
        return None
    opening = _OPENING.match(normal)
    rest = normal[opening.end() :] if opening and opening.group(1) == verdict else normal
    return verdict, rest


def opening_letter(text: str | None) -> str | None:
    """The letter a reply opens with ("B", "(A) …", "**B**."), else None: where the first token's probabilities
    speak for the verdict. "B is incorrect; A is correct." opens with B but decides for A."""
    opening = _OPENING.match(_normal(text)) if text else None
    return opening.group(1) if opening and read_letter(text)[0] == opening.group(1) else None


_YES_NO_OPENING = re.compile(
    r"^\W*(?:" + _LABEL + r"\W*)?(?i:(yes|no|ja|nein|oui|non|sí|si|sim|да|нет|是|否))(?=[^\w\s]|\s*$|\s*\n)"
)
_YES_NO_LABEL = re.compile(rf"{_LABEL}\s*(?i:is|:|=|-)\s*(?i:(yes|no))\b")
_SUBJECT = (
    r"(?i:\b(?:the\s+)?(?:answer|response|it|this|this\s+answer|the\s+solution|solution)\s*(?:'s|is|was)?)"
)
_ABOUT_IT = re.compile(rf"{_SUBJECT}(?P<neg>{_NOT})?{_ADV}\s*(?:(?P<good>{_GOOD})|(?P<bad>{_BAD}))(?![a-z])")
_IT_HAS_FAULT = re.compile(
    rf"{_SUBJECT}\s*(?:(?i:does|did)\s*)?(?P<neg>{_NOT})?\s*{_HAS}{_NONE}?{_QUALIFY}(?:\s+\w+)?\s+{_FAULT}"
)
_YES = ("yes", "ja", "oui", "sí", "si", "sim", "да", "是")


def read_yes_no(text: str | None) -> bool | None:
    """True for yes, False for no, None when the reply says neither or both without a conclusion."""
    if not text:
        return None
    structured = read_structured(text, ("yes", "no"))
    if structured:
        return structured == "yes"
    normal = _normal(text)
    opening = _YES_NO_OPENING.match(normal)
    if opening:
        return opening.group(1).lower() in _YES
    said: list[tuple[int, bool, bool]] = []  # (where, yes, concluding)
    for m in _YES_NO_LABEL.finditer(normal):
        said.append((m.start(), m.group(1).lower() == "yes", True))
    for m in _ABOUT_IT.finditer(normal):
        before = _sentence_before(normal, m.start())
        if _HEDGE.search(before):
            continue
        yes = (m.group("good") is not None) != (m.group("neg") is not None)
        said.append((m.start(), yes, bool(_CONCLUDING.search(before))))
    for m in _IT_HAS_FAULT.finditer(normal):
        said.append((m.start(), (m.group("neg") is None) != (m.group("none") is None), False))
    if not said:
        return None
    answers = {yes for _, yes, _ in said}
    if len(answers) == 1:
        return answers.pop()
    concluding = [yes for _, yes, last in sorted(said) if last]
    return concluding[-1] if concluding else None
