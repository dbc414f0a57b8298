#!/usr/bin/env python3
"""tools/gen_relm_regex_oracle.py: Python's verdicts for mlsys_relm.h's Unicode regex dialect (issue 24 item 5).

Writes tests/data/relm/regex_oracle.txt, which tests/test_relm_regex_unicode.c replays (no Python at test time):
patterns using \\p{L} \\p{N} \\p{Nd} \\p{Lu} \\p{Ll} \\p{Lt} \\p{LC} and their negations, Unicode \\d \\w \\s
(MLSYS_RELM_RE_UNICODE), ASCII \\d \\w \\s, and (?i) / (?i:...) / (?-i:...), each with random strings and Python's
fullmatch verdict.

The oracle: Python's `re` (str patterns) for \\d \\w \\s and case-insensitivity, re.ASCII for the patterns compiled
without MLSYS_RELM_RE_UNICODE, and the `regex` module (VERSION0) for patterns with \\p, which `re` lacks.
Random strings use only code points assigned in this Python's Unicode (unicodedata.unidata_version; 14.0 for 3.11),
because `re`'s tables are that old while mlsys_relm.h's are Unicode 17 (node's ICU; tools/gen_relm_unicode.js):
for code points assigned since, the two rightly differ.

Run (with the python3 that has `regex`): python3 tools/gen_relm_regex_oracle.py > tests/data/relm/regex_oracle.txt
The output is deterministic (a fixed seed).

Format, one record a line:
  P <flags> <pattern, UTF-8 hex> <oracle>   # <pattern, ascii()>      flags: u (MLSYS_RELM_RE_UNICODE) or -
  S <0|1> <string, UTF-8 hex> [X <python's verdict> <reason>]           # <string, ascii()>
A record with X is a known difference: the expected verdict is ours, the reason says why it differs from Python's.
The last line: E <patterns> <strings> <exceptions>.
"""
import random
import re
import sys
import unicodedata

import regex

SEED = 20261129
rng = random.Random(SEED)

ASSIGNED = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) != 'Cn']
ASSIGNED_SET = set(ASSIGNED)

# Characters the brief asks for, grouped so patterns can draw from the relevant ones.
POOLS = {
    'ascii': [chr(c) for c in range(0x20, 0x7F)] + ['\t', '\n', '\r', '\x0b', '\x0c', '\x00'],
    'latin1': [chr(c) for c in range(0xA0, 0x100)] + ['\x85'],
    'greek': list('ΑαΒβϐΓγΔδΕεϵΘθϑϴΙιͅιΚκϰΜμµΠπϖΡρϱΣσςΦφϕΩωΩΐΐΰΰάΆ'),
    'cyrillic': list('АаБбВвГгДдЕеЁёЖжЯяЮюЩщЪъЫыІіЇїᲀᲁ'),
    'cjk': list('中文字一二三〇〆々ひらがなカタカナ한국어'),
    'digits': list('0123456789٠١٢٣٤٥٦٧٨٩۰۵०५९০৫๐๓๙０３９𝟘𝟙𝟵᠐᠕߀߅'),
    'numbers': list('²³¹¼½¾ⅠⅡⅫⅰⅻ①⑳⓪㉑〇〡〢𐄇𒐀𝍠'),
    'marks': ['\u0300', '\u0301', '\u0308', '\u0345', '\u064b', '\u093f', '\u0903', '\u20dd', '\u200d', '\u200c',
              '\u203f', '\u2040', '\ufe33', '\uff3f'],
    'space': ['\t', '\n', '\x0b', '\x0c', '\r', ' ', '\x1c', '\x1d', '\x1e', '\x1f', '\x85', '\xa0', '\u1680',
              '\u2000', '\u2003', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\u200b', '\ufeff',
              '\u180e', '\u2060'],
    'case': list('ßẞKkKSsſIiİıΣσςǄǅǆǇǈǉµμΜΘθϑϴΙιͅιΒβϐΚκϰΠπϖΡρϱΦφϕΩωΩÅåÅ') +
            ['\U00010400', '\U00010428', '\U0001e900', '\U0001e922', 'ᏸ', 'Ᏸ', 'ꭰ', 'Ꭰ', 'ǰ', 'ﬀ', 'ŉ', 'ᾀ', 'ᾈ', 'ẛ',
             'ṡ', 'Ṡ', 'Ⓐ', 'ⓐ', 'Ａ', 'ａ', 'Ⅰ', 'ⅰ'],
    'other': list('!?.,;:-_—–“”«»¿¡§¶†‡•…€£¥©®™°±×÷←→∀∂∑√∞≠≤≥♠♥😀🙂🎉') + ['\U0001d400', '\U0001d7d8', '\ue000',
                                                                        '\U000f0000'],
}
POOLS['mixed'] = sorted(set(sum(POOLS.values(), [])))
for name, chars in POOLS.items():
    for ch in chars:
        assert ord(ch) in ASSIGNED_SET or unicodedata.category(ch) == 'Co', (name, ascii(ch))


def pool(spec):
    out = []
    for part in spec.split('+'):
        out += POOLS[part] if part in POOLS else list(part)
    return out


# (flags, pattern, oracle, pool spec, max length). Oracles: 're' (Unicode str), 'ascii' (re.ASCII), 'regex'.
PATTERNS = [
    # \p{..} (oracle: the regex module)
    ('-', r'\p{L}+', 'regex', 'latin1+greek+cyrillic+cjk+marks+digits+other', 4),
    ('-', r'\p{L}*', 'regex', 'mixed', 3),
    ('-', r'\pL\pN', 'regex', 'latin1+greek+digits+numbers+cjk', 2),
    ('-', r'\p{N}+', 'regex', 'digits+numbers+latin1+cjk', 4),
    ('-', r'\P{L}+', 'regex', 'latin1+greek+digits+marks+space+other', 4),
    ('-', r'\P{N}*', 'regex', 'digits+numbers+latin1+other', 3),
    ('-', r'\PL\PN', 'regex', 'mixed', 2),
    ('-', r'\p{Letter}+', 'regex', 'greek+cyrillic+cjk+marks+numbers', 3),
    ('-', r'\p{Number}+', 'regex', 'digits+numbers+cjk+latin1', 3),
    ('-', r'\p{ letter }\p{NUMBER}', 'regex', 'cjk+numbers+digits+greek', 2),
    ('-', r'\p{Nd}+', 'regex', 'digits+numbers', 4),
    ('-', r'\p{Decimal_Number}\P{Nd}', 'regex', 'digits+numbers+ascii', 2),
    ('-', r'\P{Nd}+', 'regex', 'digits+numbers+other', 3),
    ('-', r'\p{^L}+', 'regex', 'latin1+greek+digits+other', 3),
    ('-', r'\P{^N}+', 'regex', 'digits+numbers+latin1', 3),
    ('-', r'[\p{L}_]+', 'regex', 'ascii+greek+cjk+marks', 4),
    ('-', r'[\p{L}\p{N}]+', 'regex', 'mixed', 4),
    ('-', r'[^\p{N}]+', 'regex', 'digits+numbers+latin1+greek', 3),
    ('-', r'[^\p{L}\p{N}]*', 'regex', 'mixed', 3),
    ('-', r'[\P{L}a-c]+', 'regex', 'ascii+greek+digits', 4),
    ('-', r'[^\P{L}]+', 'regex', 'latin1+greek+digits+other', 3),
    ('-', r'[^\P{N}\p{Nd}]+', 'regex', 'digits+numbers', 3),
    ('-', r'(\p{L}|\p{N})+-', 'regex', 'latin1+digits+numbers+-', 4),
    ('-', r'\p{L}{2,3}\p{N}?', 'regex', 'greek+cyrillic+digits+numbers', 4),
    ('-', r'(?:\P{L}|x)\p{L}', 'regex', 'ascii+greek+other', 2),
    ('u', r'[\p{L}\d_]+', 'regex', 'ascii+greek+digits+numbers+marks', 4),
    ('u', r'\p{N}\d', 'regex', 'digits+numbers', 2),
    ('u', r'[^\p{L}\d]+', 'regex', 'latin1+digits+numbers+other', 3),
    ('u', r'[\p{L}\d]+', 'regex', 'ascii+digits+greek', 3),
    ('-', r'\p{N}[0-9]', 'regex', 'digits+numbers', 2),
    ('-', r'\p{Lu}+', 'regex', 'case+greek+cyrillic+latin1', 3),
    ('-', r'\p{Ll}\p{Lu}', 'regex', 'case+greek+cyrillic', 2),
    ('-', r'\P{Lu}+', 'regex', 'case+latin1+digits', 3),
    ('-', r'\p{Lt}|\p{Titlecase_Letter}x', 'regex', 'case+ǅǈǋǲᾈᾼx', 2),
    ('-', r'[\p{Lu}\p{Nd}]+', 'regex', 'case+digits', 3),
    ('-', r'\p{LC}+', 'regex', 'case+cjk+other', 3),
    ('-', r'\p{LC}\P{Cased_Letter}', 'regex', 'case+cjk+other', 2),
    ('-', r'(?i)\p{Lu}+', 'regex', 'case+cjk+other+marks', 3),
    ('-', r'(?i)\P{Ll}', 'regex', 'case+cjk+other', 1),
    ('-', r'(?i)[^\p{Lu}0-9]+', 'regex', 'case+digits+cjk', 3),
    ('-', r'a(?i:\p{Lt})\p{Lt}', 'regex', 'aǅǆǄǈ', 3),
    # Unicode \d \w \s (oracle: re)
    ('u', r'\d+', 're', 'digits+numbers+ascii', 4),
    ('u', r'\D+', 're', 'digits+numbers+latin1', 3),
    ('u', r'\w+', 're', 'ascii+latin1+greek+marks+numbers+cjk', 4),
    ('u', r'\W+', 're', 'ascii+marks+other+space+numbers', 3),
    ('u', r'\s+', 're', 'space', 4),
    ('u', r'\S+', 're', 'space+ascii+latin1', 3),
    ('u', r'\w\s\d', 're', 'greek+space+digits+marks', 3),
    ('u', r'[\w\s]+', 're', 'mixed', 4),
    ('u', r'[^\w]+', 're', 'marks+other+latin1+space', 3),
    ('u', r'[^\d\s]+', 're', 'digits+space+latin1', 3),
    ('u', r'[\W\d]+', 're', 'digits+numbers+marks+greek+other', 3),
    ('u', r'[^\W\d_]+', 're', 'ascii+greek+digits+numbers+marks', 3),
    ('u', r'(\w|\s)*', 're', 'mixed', 4),
    ('u', r'\w{2}\s?\d*', 're', 'cyrillic+space+digits', 5),
    ('u', r'[\S]+', 're', 'space+cjk', 3),
    ('u', r'[^\S\n]+', 're', 'space', 3),
    ('u', r'[\D\S]+', 're', 'space+digits', 3),
    ('u', r'[^\D]+', 're', 'digits+numbers', 3),
    ('u', r'[\w-]+\.\w+', 're', 'cyrillic+cjk+ascii+-.', 6),
    ('u', r'\s*\w+\s*', 're', 'space+greek+numbers', 5),
    ('u', r'[\s\d]', 're', 'space+digits+numbers', 1),
    ('u', r'.\W.', 're', 'mixed', 3),
    # ASCII \d \w \s (no flag; oracle: re.ASCII): the existing behaviour
    ('-', r'\d+', 'ascii', 'digits+ascii', 3),
    ('-', r'\w+', 'ascii', 'ascii+latin1+greek', 3),
    ('-', r'\s+', 'ascii', 'space', 3),
    ('-', r'[\W\S]+', 'ascii', 'space+latin1+ascii', 3),
    ('-', r'[^\w\s]+', 'ascii', 'mixed', 3),
    # (?i) (oracle: re with Unicode case folding)
    ('-', r'(?i)ß', 're', 'case+latin1', 2),
    ('-', r'(?i)ẞ+', 're', 'case', 3),
    ('-', r'(?i)k', 're', 'case', 1),
    ('-', r'(?i)K', 're', 'case+kK', 1),
    ('-', r'(?i)s+', 're', 'case+sS', 3),
    ('-', r'(?i)ſ', 're', 'case+sS', 1),
    ('-', r'(?i)σ+', 're', 'case+greek', 3),
    ('-', r'(?i)Σς', 're', 'case+greek', 2),
    ('-', r'(?i)i', 're', 'case', 1),
    ('-', r'(?i)İ', 're', 'case+iI', 1),
    ('-', r'(?i)ı+', 're', 'case+iI', 2),
    ('-', r'(?i)I', 're', 'case', 1),
    ('-', r'(?i)[a-z]+', 're', 'case+ascii', 4),
    ('-', r'(?i)[^a-z]+', 're', 'case+ascii', 3),
    ('-', r'(?i)[α-ω]+', 're', 'greek+case', 3),
    ('-', r'(?i)[а-я]+', 're', 'cyrillic', 3),
    ('-', r'(?i)straße', 're', 'STRAẞEstraßeſ', 6),
    ('-', r'(?i)[k-m]+', 're', 'case+klmKLM', 3),
    ('-', r'(?i)[^k]', 're', 'case+kK', 1),
    ('-', r'a(?i:b)c', 're', 'abcABC', 3),
    ('-', r'(?i:σ)ς', 're', 'case+greek', 2),
    ('-', r'(?i)a(?-i:b)c', 're', 'abcABC', 3),
    ('-', r'(?i)(?-i:σ)ς', 're', 'case+greek', 2),
    ('-', r'(?i)µ', 're', 'case', 1),
    ('-', r'(?i)[µ]', 're', 'case', 1),
    ('-', r'(?i)ǅ', 're', 'case', 1),
    ('-', r'(?i)[ǆ]+', 're', 'case', 2),
    ('-', r'(?i)θ', 're', 'case+greek', 1),
    ('-', r'(?i)\u0345', 're', 'case+greek', 1),
    ('-', r'(?i)ι+', 're', 'case+greek', 2),
    ('-', r'(?i)[\u1f80-\u1faf]+', 're', 'case+ᾠᾨᾧᾯ', 3),
    ('-', r'(?i)[Ⅰ-Ⅻ]+', 're', 'numbers+case', 3),
    ('-', r'(?i)ⓐ', 're', 'case', 1),
    ('-', r'(?i)[ａ-ｚ]+', 're', 'case+ascii', 3),
    ('-', r'(?i)[\U00010400-\U00010427]+', 're', 'case', 3),
    ('-', r'(?i)\U0001e922', 're', 'case', 1),
    ('-', r'(?i)[ꭰ-ꮿ]', 're', 'case', 1),
    ('-', r'(?i)[\x00-\x7f]+', 're', 'case+ascii', 3),
    ('-', r'(?i)[^\x00-\x7f]+', 're', 'case+ascii', 3),
    ('-', r'(?i).', 're', 'case+\n', 1),
    ('-', r'(?i)(?i)ǰ|ŉ', 're', 'case', 1),
    ('-', r'(?i)[^ǅ-ǆ]', 're', 'case', 1),
    ('u', r'(?i)\w+', 're', 'case+marks+other', 3),
    ('u', r'(?i)[^\W\d]+', 're', 'case+digits+marks', 3),
    ('u', r'(?i)\d', 're', 'digits+case', 1),
    ('u', r'(?i)[\s\dk]+', 're', 'space+digits+case', 3),
    ('u', r'(?i)[^\sk]+', 're', 'space+case', 3),
    ('u', r'(?i)\W', 're', 'case+marks+other', 1),
    # (?i) with \p (oracle: the regex module, whose (?i) is Unicode simple case folding)
    ('-', r'(?i)[\p{N}a]+', 'regex', 'numbers+digits+aA', 3),
    ('-', r'(?i)\p{L}k', 'regex', 'case', 2),
    ('-', r'(?i)[^\p{L}s]+', 'regex', 'case+digits+other', 3),
    ('-', r'(?i)\P{N}σ', 'regex', 'case+numbers', 2),
]


def oracle(flags, pat, kind):
    if kind == 'regex':
        return regex.compile(pat, regex.VERSION0)
    if kind == 'ascii':
        return re.compile(pat, re.ASCII)
    return re.compile(pat)


# Known differences (kept minimal): none so far. A function (flags, pattern, string) -> reason or None.
def exception(flags, pat, s):
    return None


def check_fold_table(header='mlsys_relm.h'):
    """The header's FOLD table against `re` itself, for every code point assigned in this Python's Unicode: the
    class of c (c alone when it has no row) must be exactly the characters (?i)c matches among the candidates (c's
    class, its lower / upper / casefold / title forms and their classes). Raises on a difference; returns the count
    of code points checked."""
    text = open(header, encoding='utf-8').read()
    start = text.index('mlsys__relm_uc_FOLD[')
    body = text[start:text.index('};', start)]
    nxt = {int(a, 16): int(b, 16) for a, b in re.findall(r'\{0x([0-9A-F]+), 0x([0-9A-F]+)\}', body)}

    def cls(c):
        out, x = {c}, nxt.get(c, c)
        while x != c:
            out.add(x)
            x = nxt[x]
        return out
    n = 0
    for c in ASSIGNED:
        ch = chr(c)
        cand = set(cls(c))
        for f in (ch.lower(), ch.upper(), ch.casefold(), ch.title()):
            if len(f) == 1:
                cand |= cls(ord(f))
        if len(cand) == 1:
            continue
        rx = re.compile('(?i)' + re.escape(ch))
        for d in cand:
            if d in ASSIGNED_SET and bool(rx.fullmatch(chr(d))) != (d in cls(c)):
                raise SystemExit('FOLD table: U+%04X vs U+%04X differs from re' % (c, d))
        n += 1
    return n


def hexs(s):
    return s.encode('utf-8').hex()


def main():
    out = sys.stdout
    out.write('# generated by tools/gen_relm_regex_oracle.py (seed %d): Python %s, unicodedata %s, regex %s\n'
              % (SEED, sys.version.split()[0], unicodedata.unidata_version, regex.__version__))
    nf = check_fold_table()
    out.write('# the FOLD table of mlsys_relm.h agrees with re for all %d cased code points of Unicode %s\n'
              % (nf, unicodedata.unidata_version))
    np = ns = nx = 0
    rand_pool = [chr(c) for c in ASSIGNED]
    for flags, pat, kind, spec, maxlen in PATTERNS:
        rx = oracle(flags, pat, kind)
        chars = pool(spec)
        out.write('P %s %s %s   # %s\n' % (flags, hexs(pat), kind, ascii(pat)))
        np += 1
        seen = set()
        strings = []
        tries = 0
        while len(strings) < 30 and tries < 3000:
            tries += 1
            n = rng.randint(0 if tries % 7 == 0 else 1, maxlen)
            mode = rng.random()
            if mode < 0.75:
                s = ''.join(rng.choice(chars) for _ in range(n))
            elif mode < 0.9:
                s = ''.join(rng.choice(POOLS['mixed']) for _ in range(n))
            else:
                s = ''.join(rng.choice(rand_pool) for _ in range(n))
            if s in seen:
                continue
            seen.add(s)
            strings.append(s)
        for s in strings:
            py = 1 if rx.fullmatch(s) else 0
            why = exception(flags, pat, s)
            if why:
                out.write('S %d %s X %d %s   # %s\n' % (1 - py, hexs(s), py, why, ascii(s)))
                nx += 1
            else:
                out.write('S %d %s   # %s\n' % (py, hexs(s), ascii(s)))
            ns += 1
    out.write('E %d %d %d\n' % (np, ns, nx))
    print('patterns %d strings %d exceptions %d' % (np, ns, nx), file=sys.stderr)


if __name__ == '__main__':
    main()
