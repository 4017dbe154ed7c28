"""First names and the gender the BBQ authors' name list gives them: the content a
FiSCo self-test checks a spec's name -> group assignment against (a spec that puts
"maria" in the male group is caught; a name the list lacks is reported as unchecked).

Source: Parrish et al. 2022, BBQ, `templates/vocabulary_proper_names.csv` of
github.com/nyu-mll/BBQ at commit bea11bd97d79217245b5871acd247b9d6eb24598 (sha256
17009b2c9d086c19c25b5107aa4792712fdf5024270e62f40bd4818ecb2e9c5d), CC BY 4.0; its rows
of first names (`First_last` first / first_only) with gender F or M, which the authors
took from Tzioumis 2018 and the US census 1990 first-name lists. Lower-cased; no name
there has two genders.
"""

from __future__ import annotations

NAME_GENDER: dict[str, str] = {
    "abdullah": "male", "abdulrahman": "male", "ahmed": "male", "alan": "male", "albert": "male",
    "alejandra": "female", "alex": "male", "ali": "male", "amina": "female", "amy": "female", "andrea": "female",
    "andrew": "male", "anne": "female", "annie": "female", "ayanna": "female", "barbara": "female",
    "betty": "female", "blanca": "female", "brian": "male", "camila": "female", "carlos": "male", "carol": "female",
    "charles": "male", "christopher": "male", "dan": "male", "daniel": "male", "darnell": "male", "david": "male",
    "deshawn": "male", "donald": "male", "donna": "female", "dorothy": "female", "ebony": "female", "edward": "male",
    "elaine": "female", "elizabeth": "female", "eric": "male", "esperanza": "female", "fatima": "female",
    "francisco": "male", "gary": "male", "george": "male", "grace": "female", "graciela": "female",
    "guadalupe": "female", "hamza": "male", "heather": "female", "helen": "female", "hussein": "male",
    "imani": "female", "ivory": "female", "jamal": "male", "james": "male", "jeffrey": "male", "jennifer": "female",
    "jenny": "female", "jermaine": "male", "jerry": "male", "jesus": "male", "joanna": "female", "john": "male",
    "jorge": "male", "jose": "male", "joseph": "male", "juan": "male", "juana": "female", "julie": "female",
    "karen": "female", "kathleen": "female", "kelly": "female", "kenneth": "male", "khalid": "male",
    "khalil": "male", "latasha": "female", "latoya": "female", "linda": "female", "lisa": "female", "lori": "female",
    "luis": "male", "malachi": "male", "margaret": "female", "maria": "female", "maribel": "female", "mark": "male",
    "mary": "female", "maryam": "female", "matthew": "male", "mayra": "female", "michael": "male", "miguel": "male",
    "mohamed": "male", "nancy": "female", "nia": "female", "noor": "female", "omar": "male", "patricia": "female",
    "paul": "male", "peter": "male", "queenie": "female", "rafael": "male", "reem": "female", "richard": "male",
    "robert": "male", "roberto": "male", "roosevelt": "male", "ruth": "female", "salma": "female", "sam": "male",
    "sandra": "female", "scott": "male", "shanice": "female", "shannon": "female", "sharon": "female",
    "steven": "male", "susan": "female", "tala": "female", "tamika": "female", "tanisha": "female",
    "terrell": "male", "thalia": "female", "thomas": "male", "timothy": "male", "trevon": "male", "tyrone": "male",
    "vicky": "female", "vivian": "female", "williams": "male", "winnie": "female", "yousouf": "male",
    "zahra": "female", "zeinab": "female",
}

GENDER_WORDS = {"female": "female", "f": "female", "woman": "female", "women": "female", "girl": "female",
                "male": "male", "m": "male", "man": "male", "men": "male", "boy": "male"}
"""A spec's group label -> the gender it names (other labels are not checked)."""

__all__ = ["GENDER_WORDS", "NAME_GENDER"]
