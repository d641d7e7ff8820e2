"""The built-in item bank: procedurally generated questions whose answers the code knows.

Each generator draws parameters from a seeded RNG and writes the question, the gold answer and
the worked solution as sentences. Every solution is written so that each of the four planted
error types has a place to go, and the bank records it:
- numbers and named facts (factual_fabrication),
- a relation the reasoning turns on: more/less, above/below, meets, follows... (logical_reversal),
- a hedged claim: usually, typically, about... (overclaim),
- a necessary condition or caveat, listed in `conditions` (critical_omission).
The last sentence is always "The answer is X." so a reference checker can find the claim.

The facts below (planet sizes, river lengths, mountain heights) are rounded public figures
written for this project.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

import numpy as np

LICENSE = "Apache-2.0 (judgeops built-in bank)"

PLANETS_KM = {
    "Mercury": 4879,
    "Venus": 12104,
    "Earth": 12742,
    "Mars": 6779,
    "Jupiter": 139820,
    "Saturn": 116460,
    "Uranus": 50724,
    "Neptune": 49244,
}
RIVERS_KM = {
    "Nile": 6650,
    "Amazon": 6400,
    "Yangtze": 6300,
    "Mississippi": 3730,
    "Volga": 3530,
    "Danube": 2850,
    "Rhine": 1230,
    "Thames": 346,
    "Mekong": 4350,
    "Congo": 4700,
}
MOUNTAINS_M = {
    "Everest": 8849,
    "K2": 8611,
    "Kangchenjunga": 8586,
    "Aconcagua": 6961,
    "Denali": 6190,
    "Kilimanjaro": 5895,
    "Elbrus": 5642,
    "Mont Blanc": 4806,
    "Matterhorn": 4478,
}
NONSENSE = [
    "zorbs",
    "blickets",
    "wugs",
    "daxes",
    "feps",
    "toves",
    "grinks",
    "lorps",
    "snerks",
    "vabs",
    "quells",
    "morks",
    "plinths",
    "trocks",
    "yemps",
    "drazzles",
]
NAMES = [
    "Ana",
    "Ben",
    "Chloe",
    "Dev",
    "Elif",
    "Farah",
    "Goran",
    "Hana",
    "Ivan",
    "Jun",
    "Kofi",
    "Lena",
    "Mateo",
    "Nia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sami",
    "Tomas",
]
GOODS = ["muffins", "bagels", "cookies", "rolls", "pies", "scones", "croissants", "pretzels"]
MATERIALS = {
    "aluminium": 2.7,
    "iron": 7.9,
    "copper": 8.9,
    "oak": 0.7,
    "ice": 0.9,
    "granite": 2.7,
    "pine": 0.5,
    "lead": 11.3,
    "glass": 2.5,
    "cork": 0.2,
}

Item = dict[str, object]


def _item(domain: str, question: str, gold: str, steps: list[str], conditions: list[str]) -> Item:
    assert all(c in steps for c in conditions)
    return {"domain": domain, "question": question, "gold": gold, "steps": steps, "conditions": conditions}


def _more_less(a: float, b: float) -> str:
    return "more than" if a > b else "less than"


def math_bakery(rng: np.random.Generator) -> Item:
    good = rng.choice(GOODS)
    n, k, d = int(rng.integers(3, 40)), int(rng.integers(2, 13)), int(rng.integers(2, 15))
    daily, total = n * k, n * k * d
    cond = f"This assumes the bakery sells the same {n} boxes on every one of the {d} days."
    steps = [
        f"Each day the bakery sells {n} × {k} = {daily} {good}.",
        f"Over {d} days it sells {daily} × {d} = {total} {good}.",
        cond,
        f"Since {d} days is more than one day, the total of {total} is larger than one day's {daily}.",
        "Real daily sales usually vary a little around this planned figure.",
        f"The answer is {total}.",
    ]
    q = f"A bakery sells {n} boxes of {good} each day, and every box holds {k} {good}. How many {good} does it sell in {d} days?"
    return _item("math", q, str(total), steps, [cond])


def math_discount(rng: np.random.Generator) -> Item:
    name = rng.choice(NAMES)
    price, count = int(rng.choice([20, 40, 60, 80])), int(rng.integers(2, 9))
    pct, threshold = int(rng.choice([10, 20, 25, 50])), int(rng.choice([50, 100, 150, 200, 300]))
    sub = price * count
    if sub > threshold:
        disc = sub * pct // 100
        total = sub - disc
        cond = f"The discount applies only because the order total is above ${threshold}."
        steps = [
            f"{count} shirts cost {count} × ${price} = ${sub}.",
            f"Since ${sub} is more than ${threshold}, the {pct}% discount applies.",
            f"{pct}% of ${sub} is ${disc}, so {name} pays ${sub} − ${disc} = ${total}.",
            cond,
        ]
    else:
        total = sub
        cond = f"The discount would apply only if the order total were above ${threshold}."
        steps = [
            f"{count} shirts cost {count} × ${price} = ${sub}.",
            f"Since ${sub} is less than ${threshold}, the {pct}% discount does not apply.",
            cond,
            f"So {name} pays the full ${total}.",
        ]
    steps += [
        "Sales tax, which usually depends on the state, is not included here.",
        f"The answer is ${total}.",
    ]
    q = (
        f"A shirt costs ${price}. A store takes {pct}% off any order above ${threshold}. "
        f"{name} buys {count} shirts. How much does {name} pay before tax?"
    )
    return _item("math", q, f"${total}", steps, [cond])


def math_speed(rng: np.random.Generator) -> Item:
    v, t = int(rng.integers(8, 40)), int(rng.integers(2, 9))
    d = v * t
    cond = f"This treats {d} km as the whole distance ridden during the {t} hours, breaks included."
    steps = [
        "Average speed is the total distance divided by the total time.",
        f"{d} km ÷ {t} h = {v} km/h.",
        cond,
        "For the same distance, a longer riding time would give a lower average speed.",
        "The speed at any given moment typically differs from this average.",
        f"The answer is {v} km/h.",
    ]
    q = f"A cyclist rides {d} km in {t} hours. What is the cyclist's average speed in km/h?"
    return _item("math", q, f"{v} km/h", steps, [cond])


def math_cups(rng: np.random.Generator) -> Item:
    x = int(rng.integers(2, 13))
    ml = 240 * x
    cond = "This uses the US customary cup of 240 millilitres, not the larger imperial cup."
    steps = [
        "One cup is 240 millilitres.",
        f"{x} cups × 240 mL = {ml} mL.",
        cond,
        f"Since {x} cups is more than one cup, the result is larger than 240 mL.",
        "Kitchen measuring cups can be off by a few millilitres in practice.",
        f"The answer is {ml} mL.",
    ]
    q = f"A recipe needs {x} US cups of milk. How many millilitres is that?"
    return _item("math", q, f"{ml} mL", steps, [cond])


def logic_syllogism(rng: np.random.Generator) -> Item:
    a, b, c = (str(w) for w in rng.choice(NONSENSE, size=3, replace=False))
    if rng.random() < 0.5:
        cond = f"This relies on the first premise holding for every one of the {a} without exception."
        steps = [
            f"The first premise says every one of the {a} is one of the {b}.",
            f"The second premise says some {c} are {a}.",
            f"Those {c} must therefore be {b}, so the conclusion follows.",
            cond,
            "In everyday speech, 'some' usually means 'at least one'.",
            "The answer is yes.",
        ]
        q = f"All {a} are {b}. Some {c} are {a}. Does it follow that some {c} are {b}?"
        return _item("logic", q, "yes", steps, [cond])
    cond = "A single possible case where both premises are true and the conclusion is false is enough to reject it."
    steps = [
        f"The premises say every one of the {a} is one of the {b}, and every one of the {c} is one of the {b}.",
        f"Sharing the property of being {b} does not make the {c} into {a}.",
        cond,
        "So the conclusion does not follow and the argument is invalid.",
        "This mistake is usually called the fallacy of the undistributed middle.",
        "The answer is no.",
    ]
    q = f"All {a} are {b}. All {c} are {b}. Does it follow that all {c} are {a}?"
    return _item("logic", q, "no", steps, [cond])


def science_ohm(rng: np.random.Generator) -> Item:
    i, r = int(rng.integers(1, 13)), int(rng.integers(2, 60))
    v = i * r
    cond = (
        f"This holds because the resistor is ohmic, so its resistance stays at {r} Ω as the current changes."
    )
    steps = [
        "Ohm's law states that voltage equals current times resistance.",
        f"{i} A × {r} Ω = {v} V.",
        cond,
        "For the same resistor, a larger current increases the voltage across it.",
        "Real resistors usually warm up slightly, which can shift their value a little.",
        f"The answer is {v} V.",
    ]
    q = f"A resistor of {r} ohms carries a current of {i} amperes. What is the voltage across it?"
    return _item("science", q, f"{v} V", steps, [cond])


def science_density(rng: np.random.Generator) -> Item:
    material = str(rng.choice(list(MATERIALS)))
    rho, vol = MATERIALS[material], int(rng.integers(2, 40)) * 10
    mass = round(rho * vol, 1)
    mass_s = f"{mass:g}"
    cond = f"This assumes the block is solid {material} with no hollow parts."
    fate = "sink" if rho > 1 else "float"
    steps = [
        "Mass equals density times volume.",
        f"{rho:g} g/cm³ × {vol} cm³ = {mass_s} g.",
        cond,
        f"Since {rho:g} g/cm³ is {_more_less(rho, 1)} 1 g/cm³, the block would {fate} in water.",
        f"Published densities of {material} typically vary by a few percent.",
        f"The answer is {mass_s} g.",
    ]
    q = f"A block of {material} has a volume of {vol} cm³ and a density of {rho:g} g/cm³. What is its mass?"
    return _item("science", q, f"{mass_s} g", steps, [cond])


def legal_permit(rng: np.random.Generator) -> Item:
    name = str(rng.choice(NAMES))
    amin, ymin = int(rng.choice([16, 18, 21])), int(rng.integers(1, 6))
    age_ok, res_ok = rng.random() < 0.6, rng.random() < 0.7
    age = amin + int(rng.integers(1, 30)) if age_ok else amin - int(rng.integers(1, 4))
    years = ymin + int(rng.integers(0, 10)) if res_ok else max(0, ymin - int(rng.integers(1, ymin + 1)))
    eligible = age_ok and res_ok
    cond = "Both conditions must hold; meeting only one of them is not enough."
    steps = [
        f"{name} is {age}, which is {'above' if age_ok else 'below'} the minimum age of {amin}.",
        f"{name} has lived in the city for {years} years, which {'meets' if res_ok else 'does not meet'} the minimum of {ymin} years.",
        cond,
        f"So {name} {'is eligible' if eligible else 'is not eligible'} for a permit.",
        "Permits are usually issued within a few weeks of a complete application.",
        f"The answer is {'yes' if eligible else 'no'}.",
    ]
    q = (
        f"Under a city rule, a resident may get a parking permit only if they are older than {amin - 1} "
        f"and have lived in the city for at least {ymin} years. {name} is {age} and has lived in the city "
        f"for {years} years. Is {name} eligible?"
    )
    return _item("legal", q, "yes" if eligible else "no", steps, [cond])


def legal_notice(rng: np.random.Generator) -> Item:
    need = int(rng.choice([14, 30, 60]))
    given = need + int(rng.integers(1, 20)) if rng.random() < 0.5 else need - int(rng.integers(1, need // 2))
    enough = given >= need
    cond = "The notice counts only because it was given in writing, as the lease requires."
    steps = [
        f"The tenant gave {given} days of written notice.",
        f"Since {given} days is {_more_less(given, need)} the required {need} days, the notice {'meets' if enough else 'does not meet'} the lease.",
        cond,
        "Landlords can sometimes agree to a shorter notice period.",
        f"The answer is {'yes' if enough else 'no'}.",
    ]
    q = (
        f"A lease requires {need} days of written notice before moving out. A tenant gives written notice "
        f"{given} days before moving out. Was enough notice given?"
    )
    return _item("legal", q, "yes" if enough else "no", steps, [cond])


def medical_dose(rng: np.random.Generator) -> Item:
    k, w = int(rng.choice([5, 10, 15, 20])), int(rng.integers(8, 95))
    cap = int(rng.choice([250, 500, 750, 1000]))
    raw = k * w
    dose = min(raw, cap)
    cond = "This assumes normal kidney function; weak kidneys need a lower dose."
    if raw > cap:
        decide = f"Since {raw} mg is more than the {cap} mg maximum, the dose is capped at {cap} mg."
    else:
        decide = f"Since {raw} mg is less than the {cap} mg maximum, no cap is needed."
    steps = [
        f"{w} kg × {k} mg/kg = {raw} mg.",
        decide,
        cond,
        "Weight-based dosing usually gives a reasonable starting dose.",
        f"The answer is {dose} mg.",
    ]
    q = (
        f"A drug is dosed at {k} mg per kg of body weight, up to a maximum of {cap} mg per dose. "
        f"What single dose should a patient weighing {w} kg receive?"
    )
    return _item("medical", q, f"{dose} mg", steps, [cond])


def medical_triage(rng: np.random.Generator) -> Item:
    th = float(rng.choice([38.0, 38.5, 39.0]))
    t = round(th + float(rng.choice([-1, 1])) * float(rng.integers(1, 15)) / 10, 1)
    urgent = t >= th
    cond = "This holds only if the reading came from a calibrated thermometer."
    steps = [
        f"The child's temperature is {t:.1f} °C.",
        f"Since {t:.1f} °C is {'above' if urgent else 'below'} the {th:.1f} °C threshold, the child "
        f"{'should' if urgent else 'does not need to'} be seen the same day.",
        cond,
        "Fever in children is usually caused by a common viral infection.",
        f"The answer is {'yes' if urgent else 'no'}.",
    ]
    q = (
        f"A clinic's triage rule says a child with a temperature of {th:.1f} °C or higher should be seen the "
        f"same day. A child's temperature is {t:.1f} °C. Should the child be seen the same day?"
    )
    return _item("medical", q, "yes" if urgent else "no", steps, [cond])


def _compare(table: dict[str, int], unit: str, noun: str, adjective: str, method: str) -> Callable:
    def generate(rng: np.random.Generator) -> Item:
        x, y = (str(s) for s in rng.choice(list(table), size=2, replace=False))
        winner = x if table[x] > table[y] else y
        cond = f"This comparison uses the same method of measuring {method} for both."
        steps = [
            f"The {noun} {x} is about {table[x]} {unit}.",
            f"The {noun} {y} is about {table[y]} {unit}.",
            f"Since {table[x]} {unit} is {_more_less(table[x], table[y])} {table[y]} {unit}, the {x} is "
            f"{adjective[0] if winner == x else adjective[1]}.",
            cond,
            "Published figures typically differ by a few percent between sources.",
            f"The answer is {winner}.",
        ]
        q = f"Which is {adjective[0]}: the {noun} {x} or the {noun} {y}?"
        return _item("general", q, winner, steps, [cond])

    return generate


general_planets = _compare(PLANETS_KM, "km across", "planet", ("larger", "smaller"), "diameter")
general_rivers = _compare(RIVERS_KM, "km long", "river", ("longer", "shorter"), "length")
general_mountains = _compare(MOUNTAINS_M, "m high", "mountain", ("higher", "lower"), "height")

ATOMIC_NUMBERS = {
    "hydrogen": 1,
    "helium": 2,
    "lithium": 3,
    "carbon": 6,
    "nitrogen": 7,
    "oxygen": 8,
    "sodium": 11,
    "magnesium": 12,
    "aluminium": 13,
    "silicon": 14,
    "chlorine": 17,
    "argon": 18,
    "potassium": 19,
    "calcium": 20,
    "iron": 26,
    "copper": 29,
    "zinc": 30,
    "silver": 47,
    "tin": 50,
    "gold": 79,
    "mercury": 80,
    "lead": 82,
    "uranium": 92,
}
EVENT_YEARS = {
    "the first powered aeroplane flight": 1903,
    "the sinking of the Titanic": 1912,
    "the end of the Second World War": 1945,
    "the first crewed Moon landing": 1969,
    "the fall of the Berlin Wall": 1989,
    "the signing of Magna Carta": 1215,
    "Columbus's first voyage to the Americas": 1492,
    "the US Declaration of Independence": 1776,
    "the storming of the Bastille": 1789,
    "the first modern Olympic Games": 1896,
    "the Chernobyl disaster": 1986,
    "the introduction of euro banknotes": 2002,
    "the first iPhone release": 2007,
    "the opening of the Suez Canal": 1869,
}


def general_elements(rng: np.random.Generator) -> Item:
    x, y = (str(s) for s in rng.choice(list(ATOMIC_NUMBERS), size=2, replace=False))
    winner = x if ATOMIC_NUMBERS[x] > ATOMIC_NUMBERS[y] else y
    cond = "This compares atomic numbers (protons in the nucleus), not atomic masses."
    steps = [
        f"The atomic number of {x} is {ATOMIC_NUMBERS[x]}.",
        f"The atomic number of {y} is {ATOMIC_NUMBERS[y]}.",
        f"Since {ATOMIC_NUMBERS[x]} is {_more_less(ATOMIC_NUMBERS[x], ATOMIC_NUMBERS[y])} {ATOMIC_NUMBERS[y]}, "
        f"{winner} has the higher atomic number.",
        cond,
        "Elements with higher atomic numbers usually have heavier atoms, though argon and potassium are an exception.",
        f"The answer is {winner}.",
    ]
    q = f"Which element has the higher atomic number: {x} or {y}?"
    return _item("general", q, winner, steps, [cond])


def general_events(rng: np.random.Generator) -> Item:
    x, y = (str(s) for s in rng.choice(list(EVENT_YEARS), size=2, replace=False))
    first = x if EVENT_YEARS[x] < EVENT_YEARS[y] else y
    cond = "This compares the years in which each event happened, on the same calendar."
    steps = [
        f"{x[0].upper() + x[1:]} took place in {EVENT_YEARS[x]}.",
        f"{y[0].upper() + y[1:]} took place in {EVENT_YEARS[y]}.",
        f"Since {EVENT_YEARS[x]} is {_more_less(EVENT_YEARS[x], EVENT_YEARS[y])} {EVENT_YEARS[y]}, "
        f"{x} came {'first' if first == x else 'second'}.",
        cond,
        "History textbooks usually date such events by the year they began.",
        f"The answer is {first}.",
    ]
    q = f"Which happened first: {x} or {y}?"
    return _item("general", q, first, steps, [cond])


GENERATORS: dict[str, list[Callable[[np.random.Generator], Item]]] = {
    "math": [math_bakery, math_discount, math_speed, math_cups],
    "logic": [logic_syllogism],
    "science": [science_ohm, science_density],
    "legal": [legal_permit, legal_notice],
    "medical": [medical_dose, medical_triage],
    "general": [general_planets, general_rivers, general_mountains, general_elements, general_events],
}


def item_id_for(question: str) -> str:
    """Stable across runs and machines: derived from the question text only."""
    return "bank-" + hashlib.sha256(question.encode()).hexdigest()[:16]


def iter_bank(seed: int) -> Iterator[Item]:
    """Items in a fixed order for a seed: domains round-robin, no repeated question."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    domains = list(GENERATORS)
    index = 0
    misses = 0
    while misses < 10_000:
        domain = domains[index % len(domains)]
        generators = GENERATORS[domain]
        item = generators[(index // len(domains)) % len(generators)](rng)
        index += 1
        if item["question"] in seen:
            misses += 1
            continue
        seen.add(item["question"])
        item["item_id"] = item_id_for(item["question"])
        item["provenance"] = f"builtin_bank:seed={seed}:draw={index - 1}"
        yield item


def generate_bank(n_items: int, seed: int = 0) -> list[Item]:
    """The first `n_items` distinct items of the bank for `seed` (deterministic)."""
    out = []
    for item in iter_bank(seed):
        out.append(item)
        if len(out) == n_items:
            return out
    raise ValueError(
        f"the built-in bank holds only {len(out)} distinct items for seed {seed}; asked for {n_items}"
    )
