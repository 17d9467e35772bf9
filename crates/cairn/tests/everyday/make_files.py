#!/usr/bin/env python3
"""The files people really upload, for crates/cairn/tests/everyday_files.rs.

Usage: python3 make_files.py OUT_DIR

Writes into OUT_DIR the files an upload service meets every day and
OUT_DIR/manifest.json, a JSON list of cases:

    {"file":    path of the bytes, relative to OUT_DIR,
     "send_as": the file name an uploader sends ("file" when the name tells nothing),
     "expect":  "file" (stored as one file, untouched), "archive" (extracted) or
                "invalid_archive" (refused: the name says archive, the bytes are not one),
     "mime":    the media type expected, or null when not asserted,
     "tree":    for "archive", the directory (relative to OUT_DIR) holding exactly
                the tree the archive contains, as it should be extracted; else null,
     "why":     one sentence}

The groups:
  1. documents that are zips inside (OOXML, ODF, EPUB, JAR/WAR by the JDK's jar,
     APK/AAB/IPA/XPI/NuGet/VSIX/KMZ/3MF/Sketch, a wheel built by pip): files;
  2. single-file compressions of text by gzip, xz, zstd, bzip2: files;
  3. random bytes that begin with an archive's magic: files;
  4. broken archives whose name says archive: invalid_archive;
  5. a small tree archived by zip and tar with each compressor: archive.

Only the standard library, plus gzip, bzip2, xz, zstd, zip, jar (JDK), GNU tar
and pip with setuptools and wheel. A missing tool is an error naming what to
install; no case is ever skipped. Random bytes come from seeded generators and
timestamps are fixed, so a re-run writes the same cases.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import zipfile
import zlib
from pathlib import Path
from random import Random

# Every timestamp written: entries of the zips made here, files of the trees
# (which zip, tar and jar copy), the wheel (SOURCE_DATE_EPOCH).
STAMP = (2024, 3, 14, 15, 9, 26)
EPOCH = 1710428966  # 2024-03-14T15:09:26Z
ISO = "2024-03-14T15:09:26Z"

TOOLS = {
    "gzip": "gzip",
    "bzip2": "bzip2",
    "xz": "xz-utils",
    "zstd": "zstd",
    "zip": "zip",
    "jar": "default-jdk-headless, or any JDK 17+",
    "tar": "tar, GNU tar 1.31+ for --zstd and --sort",
}

CASES: list[dict] = []


class Missing(Exception):
    pass


def die(message: str) -> None:
    print(f"make_files.py: {message}", file=sys.stderr)
    sys.exit(2)


def case(file: Path, out: Path, send_as: str, expect: str, why: str,
         mime: str | None = None, tree: Path | None = None) -> None:
    assert expect in ("file", "archive", "invalid_archive")
    assert (tree is not None) == (expect == "archive")
    CASES.append({
        "file": file.relative_to(out).as_posix(),
        "send_as": send_as,
        "expect": expect,
        "mime": mime,
        "tree": tree.relative_to(out).as_posix() if tree is not None else None,
        "why": why,
    })


def run(args: list[str], cwd: Path | None = None, env: dict | None = None,
        stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(args, cwd=cwd, env=env, input=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise Missing(f"{args[0]} is not installed")
    if done.returncode != 0:
        die(f"`{' '.join(map(str, args))}` failed ({done.returncode}):\n"
            + done.stderr.decode(errors="replace") + done.stdout.decode(errors="replace"))
    return done.stdout


# --------------------------------------------------------------------- tools

def check_tools() -> str:
    """Fails, naming what to install, unless every tool is there. Returns the
    Python interpreter that has pip, setuptools and wheel."""
    missing = [f"{tool} (install {pkg})" for tool, pkg in TOOLS.items()
               if shutil.which(tool) is None]
    if not missing:
        version = run(["tar", "--version"]).decode()
        if "GNU tar" not in version:
            missing.append("GNU tar (this tar is not GNU's: install tar)")
    python = wheel_python()
    if python is None:
        missing.append("setuptools and wheel for pip (run `pip install setuptools wheel`)")
    if missing:
        die("missing tools: " + "; ".join(missing))
    return python


def wheel_python() -> str | None:
    """This interpreter if it has pip, setuptools and wheel, else the first
    python3 on PATH (or /usr/bin/python3) that has them."""
    candidates = [sys.executable]
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidates.append(os.path.join(folder, "python3"))
    candidates.append("/usr/bin/python3")
    seen = set()
    for python in candidates:
        if not python or not os.access(python, os.X_OK):
            continue
        real = os.path.realpath(python)
        if real in seen:
            continue
        seen.add(real)
        probe = subprocess.run(
            [python, "-c", "import setuptools, wheel, pip"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode == 0:
            return python
    return None


# --------------------------------------------------------------- little makers

def rand(seed: str, n: int) -> bytes:
    return Random(seed).randbytes(n)


def xml(text: str) -> bytes:
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            + textwrap.dedent(text).strip() + "\n").encode()


def write_zip(path: Path, entries: list[tuple], comment: bytes = b"") -> bytes:
    """entries: (name, data) deflated, or (name, data, zipfile.ZIP_STORED).
    Names ending in / are directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, data, *how in entries:
            info = zipfile.ZipInfo(name, STAMP)
            info.create_system = 3
            if name.endswith("/"):
                info.external_attr = (0o40755 << 16) | 0x10
                info.compress_type = zipfile.ZIP_STORED
            else:
                info.external_attr = 0o100644 << 16
                info.compress_type = how[0] if how else zipfile.ZIP_DEFLATED
            z.writestr(info, data)
        z.comment = comment
    return path.read_bytes()


def png(width: int, height: int, seed: str) -> bytes:
    """A real PNG: a gradient with a little seeded noise."""
    r = Random(seed)
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")
        for x in range(width):
            row += bytes(((x * 255) // max(width - 1, 1),
                          (y * 255) // max(height - 1, 1),
                          r.randrange(96, 160)))
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
            + chunk(b"IEND", b""))


def class_file(name: str, super_name: str = "java/lang/Object") -> bytes:
    """A valid (if empty) Java 17 class file: constant pool, this, super."""
    def utf8(s: str) -> bytes:
        b = s.encode()
        return b"\x01" + struct.pack(">H", len(b)) + b
    pool = (b"\x07\x00\x02" + utf8(name) + b"\x07\x00\x04" + utf8(super_name))
    return (b"\xca\xfe\xba\xbe" + struct.pack(">HHH", 0, 61, 5) + pool
            + struct.pack(">HHHHHHH", 0x0021, 1, 3, 0, 0, 0, 0))


def digest_manifest(entries: list[tuple], header: str, algos: tuple[str, ...],
                    eol: str = "\r\n") -> bytes:
    """A JAR-style signature manifest (as in APKs and XPIs) over the entries."""
    lines = [header, ""]
    for name, data, *_ in entries:
        if name.endswith("/"):
            continue
        lines.append(f"Name: {name}")
        for algo in algos:
            d = base64.b64encode(hashlib.new(algo.lower().replace("-", ""), data).digest())
            lines.append(f"{algo}-Digest: {d.decode()}")
        lines.append("")
    return (eol.join(lines) + eol).encode()


# ------------------------------------------------------------ realistic text

FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken",
         "Margaret", "Dennis", "Radia", "Leslie", "Sophie", "Linus", "Hedy", "Niklaus"]
LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen",
        "Thompson", "Hamilton", "Ritchie", "Perlman", "Lamport", "Wilson", "Torvalds"]
CITIES = ["Lyon", "Porto", "Kraków", "Tartu", "Ghent", "Bergen", "Bologna", "Cork"]
WORDS = ("the upload finished and the directory was pinned while the gateway kept "
         "serving blocks to peers that asked for them over bitswap").split()


def sql_dump(rows: int = 4000) -> bytes:
    r = Random("sql")
    out = [
        "-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)",
        "--",
        "-- Host: localhost    Database: shop",
        "-- ------------------------------------------------------",
        "-- Server version\t8.0.36",
        "",
        "/*!40101 SET NAMES utf8mb4 */;",
        "/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;",
        "",
        "DROP TABLE IF EXISTS `customers`;",
        "CREATE TABLE `customers` (",
        "  `id` int NOT NULL AUTO_INCREMENT,",
        "  `name` varchar(80) NOT NULL,",
        "  `email` varchar(120) NOT NULL,",
        "  `city` varchar(40) DEFAULT NULL,",
        "  `balance` decimal(10,2) NOT NULL DEFAULT '0.00',",
        "  `created_at` datetime NOT NULL,",
        "  PRIMARY KEY (`id`),",
        "  UNIQUE KEY `email` (`email`)",
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci;",
        "",
        "LOCK TABLES `customers` WRITE;",
    ]
    for i in range(1, rows + 1):
        first, last = r.choice(FIRST), r.choice(LAST)
        out.append(
            f"INSERT INTO `customers` VALUES ({i},'{first} {last}',"
            f"'{first.lower()}.{last.lower()}{i}@example.org','{r.choice(CITIES)}',"
            f"{r.randrange(0, 10_000_000) / 100:.2f},"
            f"'2023-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d} "
            f"{r.randrange(24):02d}:{r.randrange(60):02d}:{r.randrange(60):02d}');")
    out += ["UNLOCK TABLES;", "",
            "/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;",
            "-- Dump completed on 2024-03-14 15:09:26", ""]
    return "\n".join(out).encode()


def csv_text(rows: int = 5000) -> bytes:
    r = Random("csv")
    out = ["date,station,city,temperature_c,humidity_pct,wind_kmh,note"]
    for i in range(rows):
        out.append(f"2024-{1 + i % 12:02d}-{1 + i % 28:02d},ST{r.randrange(100, 999)},"
                   f"{r.choice(CITIES)},{r.uniform(-15, 38):.1f},{r.randrange(10, 100)},"
                   f"{r.uniform(0, 90):.1f},\"{' '.join(r.choices(WORDS, k=3))}\"")
    return ("\r\n".join(out) + "\r\n").encode()


def log_text(lines: int = 4000, seed: str = "log") -> bytes:
    r = Random(seed)
    paths = ["/", "/api/v0/add", "/ipfs/bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi",
             "/upload", "/files/report.pdf", "/healthz", "/metrics", "/login"]
    agents = ["curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64; rv:123.0) Gecko/20100101 Firefox/123.0",
              "kubo/0.27.0", "python-requests/2.31.0"]
    out = []
    for i in range(lines):
        s = i * 7 + r.randrange(7)
        out.append(f"10.0.{r.randrange(256)}.{r.randrange(256)} - - "
                   f"[14/Mar/2024:{(s // 3600) % 24:02d}:{(s // 60) % 60:02d}:{s % 60:02d} +0000] "
                   f"\"{r.choice(['GET', 'GET', 'GET', 'POST', 'HEAD'])} {r.choice(paths)} HTTP/1.1\" "
                   f"{r.choice([200, 200, 200, 201, 204, 304, 404, 500])} {r.randrange(0, 200_000)} "
                   f"\"-\" \"{r.choice(agents)}\" rt={r.uniform(0, 2):.3f}")
    return ("\n".join(out) + "\n").encode()


def json_text(items: int = 1500) -> bytes:
    r = Random("json")
    notes = [{"id": i,
              "title": " ".join(r.choices(WORDS, k=4)).capitalize(),
              "body": " ".join(r.choices(WORDS, k=30)),
              "tags": sorted(set(r.choices(["work", "home", "ipfs", "todo", "idea"], k=2))),
              "done": r.random() < 0.3,
              "updated": f"2024-03-{1 + i % 14:02d}T{i % 24:02d}:00:00Z"}
             for i in range(items)]
    return json.dumps({"version": 2, "notes": notes}, indent=2, ensure_ascii=False).encode()


# ------------------------------------------------------------ 1. documents

REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
OD_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
CT_NS = "http://schemas.openxmlformats.org/package/2006/content-types"
CORE_CT = "application/vnd.openxmlformats-package.core-properties+xml"
APP_CT = "application/vnd.openxmlformats-officedocument.extended-properties+xml"
VBA_CT = "application/vnd.ms-office.vbaProject"
VBA_REL = "http://schemas.microsoft.com/office/2006/relationships/vbaProject"


def content_types(overrides: dict[str, str], defaults: dict[str, str] | None = None) -> bytes:
    d = {"rels": "application/vnd.openxmlformats-package.relationships+xml",
         "xml": "application/xml"}
    d.update(defaults or {})
    body = "".join(f'<Default Extension="{k}" ContentType="{v}"/>' for k, v in d.items())
    body += "".join(f'<Override PartName="{k}" ContentType="{v}"/>' for k, v in overrides.items())
    return xml(f'<Types xmlns="{CT_NS}">{body}</Types>')


def rels(targets: list[tuple[str, str]]) -> bytes:
    body = "".join(f'<Relationship Id="rId{i}" Type="{t}" Target="{target}"/>'
                   for i, (t, target) in enumerate(targets, 1))
    return xml(f'<Relationships xmlns="{REL_NS}">{body}</Relationships>')


def package_rels(main: str) -> bytes:
    return rels([(f"{OD_REL}/officeDocument", main),
                 ("http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties",
                  "docProps/core.xml"),
                 (f"{OD_REL}/extended-properties", "docProps/app.xml")])


def core_xml(title: str) -> bytes:
    return xml(f"""
        <cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:dcmitype="http://purl.org/dc/dcmitype/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
        <dc:title>{title}</dc:title><dc:creator>Grace Hopper</dc:creator><cp:lastModifiedBy>Grace Hopper</cp:lastModifiedBy><cp:revision>3</cp:revision>
        <dcterms:created xsi:type="dcterms:W3CDTF">{ISO}</dcterms:created><dcterms:modified xsi:type="dcterms:W3CDTF">{ISO}</dcterms:modified>
        </cp:coreProperties>""")


def app_xml(application: str) -> bytes:
    return xml(f"""
        <Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties" xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">
        <Application>{application}</Application><DocSecurity>0</DocSecurity><AppVersion>16.0000</AppVersion>
        </Properties>""")


def vba_project(seed: str) -> bytes:
    # A compound file (OLE2) header, as vbaProject.bin is, then sectors.
    return b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 16 + b"\x3e\x00\x03\x00\xfe\xff" + rand(seed, 4096 - 30)


def docx(path: Path, macros: bool) -> bytes:
    main = ("application/vnd.ms-word.document.macroEnabled.main+xml" if macros else
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml")
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    paragraphs = "".join(
        f"<w:p><w:r><w:t xml:space=\"preserve\">{t}</w:t></w:r></w:p>" for t in
        ["Quarterly report", "Uploads grew by a third; the gateway served 1.2 TB.",
         "Next quarter: pinning to three regions."])
    document = xml(f"""
        <w:document xmlns:w="{w}" xmlns:r="{OD_REL}"><w:body>
        <w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>Cairn</w:t></w:r></w:p>{paragraphs}
        <w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/></w:sectPr>
        </w:body></w:document>""")
    styles = xml(f"""
        <w:styles xmlns:w="{w}"><w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
        <w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/><w:rPr><w:sz w:val="56"/></w:rPr></w:style></w:styles>""")
    overrides = {"/word/document.xml": main,
                 "/word/styles.xml": "application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml",
                 "/docProps/core.xml": CORE_CT, "/docProps/app.xml": APP_CT}
    doc_rels = [(f"{OD_REL}/styles", "styles.xml")]
    entries = [("[Content_Types].xml", content_types(overrides, {"bin": VBA_CT} if macros else None)),
               ("_rels/.rels", package_rels("word/document.xml")),
               ("word/document.xml", document)]
    if macros:
        doc_rels.append((VBA_REL, "vbaProject.bin"))
        entries.append(("word/vbaProject.bin", vba_project(path.name)))
    entries += [("word/_rels/document.xml.rels", rels(doc_rels)),
                ("word/styles.xml", styles),
                ("docProps/core.xml", core_xml("Quarterly report")),
                ("docProps/app.xml", app_xml("Microsoft Office Word"))]
    return write_zip(path, entries)


def xlsx(path: Path, macros: bool) -> bytes:
    main = ("application/vnd.ms-excel.sheet.macroEnabled.main+xml" if macros else
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml")
    s = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    r = Random(path.name)
    rows = ['<row r="1"><c r="A1" t="inlineStr"><is><t>Month</t></is></c>'
            '<c r="B1" t="inlineStr"><is><t>Uploads</t></is></c></row>']
    for i, month in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun"], 2):
        rows.append(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>{month}</t></is></c>'
                    f'<c r="B{i}"><v>{r.randrange(1000, 9000)}</v></c></row>')
    rows.append('<row r="8"><c r="A8" t="inlineStr"><is><t>Total</t></is></c>'
                '<c r="B8"><f>SUM(B2:B7)</f></c></row>')
    sheet = xml(f'<worksheet xmlns="{s}"><sheetData>{"".join(rows)}</sheetData></worksheet>')
    workbook = xml(f"""
        <workbook xmlns="{s}" xmlns:r="{OD_REL}"><sheets><sheet name="Uploads" sheetId="1" r:id="rId1"/></sheets></workbook>""")
    styles = xml(f"""
        <styleSheet xmlns="{s}"><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>
        <fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>
        <borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>
        <cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>
        <cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs></styleSheet>""")
    overrides = {"/xl/workbook.xml": main,
                 "/xl/worksheets/sheet1.xml": "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml",
                 "/xl/styles.xml": "application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml",
                 "/docProps/core.xml": CORE_CT, "/docProps/app.xml": APP_CT}
    wb_rels = [(f"{OD_REL}/worksheet", "worksheets/sheet1.xml"), (f"{OD_REL}/styles", "styles.xml")]
    entries = [("[Content_Types].xml", content_types(overrides, {"bin": VBA_CT} if macros else None)),
               ("_rels/.rels", package_rels("xl/workbook.xml")),
               ("xl/workbook.xml", workbook)]
    if macros:
        wb_rels.append((VBA_REL, "vbaProject.bin"))
        entries.append(("xl/vbaProject.bin", vba_project(path.name)))
    entries += [("xl/_rels/workbook.xml.rels", rels(wb_rels)),
                ("xl/worksheets/sheet1.xml", sheet),
                ("xl/styles.xml", styles),
                ("docProps/core.xml", core_xml("Uploads per month")),
                ("docProps/app.xml", app_xml("Microsoft Excel"))]
    return write_zip(path, entries)


def pptx(path: Path) -> bytes:
    ns = ('xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
          f'xmlns:r="{OD_REL}" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"')
    pml = "application/vnd.openxmlformats-officedocument.presentationml"
    empty_tree = ('<p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
                  '<p:grpSpPr/>{}</p:spTree>')
    title = ('<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr>'
             '<p:spPr><a:xfrm><a:off x="838200" y="365125"/><a:ext cx="10515600" cy="1325563"/></a:xfrm></p:spPr>'
             '<p:txBody><a:bodyPr/><a:lstStyle/><a:p><a:r><a:rPr lang="en-US"/><a:t>Cairn in one slide</a:t></a:r></a:p></p:txBody></p:sp>')
    presentation = xml(f"""
        <p:presentation {ns}><p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>
        <p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst><p:sldSz cx="12192000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>""")
    slide = xml(f'<p:sld {ns}><p:cSld>{empty_tree.format(title)}</p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>')
    layout = xml(f'<p:sldLayout {ns} type="title"><p:cSld name="Title Slide">{empty_tree.format("")}</p:cSld>'
                 '<p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>')
    master = xml(f"""
        <p:sldMaster {ns}><p:cSld>{empty_tree.format("")}</p:cSld>
        <p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>
        <p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>""")
    colors = "".join(f"<a:{n}><a:srgbClr val=\"{v}\"/></a:{n}>" for n, v in [
        ("dk1", "000000"), ("lt1", "FFFFFF"), ("dk2", "44546A"), ("lt2", "E7E6E6"),
        ("accent1", "4472C4"), ("accent2", "ED7D31"), ("accent3", "A5A5A5"), ("accent4", "FFC000"),
        ("accent5", "5B9BD5"), ("accent6", "70AD47"), ("hlink", "0563C1"), ("folHlink", "954F72")])
    fill = '<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>'
    line = f'<a:ln w="6350">{fill}</a:ln>'
    theme = xml(f"""
        <a:theme xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" name="Office Theme"><a:themeElements>
        <a:clrScheme name="Office">{colors}</a:clrScheme>
        <a:fontScheme name="Office"><a:majorFont><a:latin typeface="Calibri Light"/><a:ea typeface=""/><a:cs typeface=""/></a:majorFont>
        <a:minorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:minorFont></a:fontScheme>
        <a:fmtScheme name="Office"><a:fillStyleLst>{fill * 3}</a:fillStyleLst><a:lnStyleLst>{line * 3}</a:lnStyleLst>
        <a:effectStyleLst>{"<a:effectStyle><a:effectLst/></a:effectStyle>" * 3}</a:effectStyleLst><a:bgFillStyleLst>{fill * 3}</a:bgFillStyleLst></a:fmtScheme>
        </a:themeElements></a:theme>""")
    overrides = {"/ppt/presentation.xml": f"{pml}.presentation.main+xml",
                 "/ppt/slides/slide1.xml": f"{pml}.slide+xml",
                 "/ppt/slideLayouts/slideLayout1.xml": f"{pml}.slideLayout+xml",
                 "/ppt/slideMasters/slideMaster1.xml": f"{pml}.slideMaster+xml",
                 "/ppt/theme/theme1.xml": "application/vnd.openxmlformats-officedocument.theme+xml",
                 "/docProps/core.xml": CORE_CT, "/docProps/app.xml": APP_CT}
    return write_zip(path, [
        ("[Content_Types].xml", content_types(overrides)),
        ("_rels/.rels", package_rels("ppt/presentation.xml")),
        ("ppt/presentation.xml", presentation),
        ("ppt/_rels/presentation.xml.rels", rels([
            (f"{OD_REL}/slideMaster", "slideMasters/slideMaster1.xml"),
            (f"{OD_REL}/slide", "slides/slide1.xml"),
            (f"{OD_REL}/theme", "theme/theme1.xml")])),
        ("ppt/slides/slide1.xml", slide),
        ("ppt/slides/_rels/slide1.xml.rels", rels([(f"{OD_REL}/slideLayout", "../slideLayouts/slideLayout1.xml")])),
        ("ppt/slideLayouts/slideLayout1.xml", layout),
        ("ppt/slideLayouts/_rels/slideLayout1.xml.rels", rels([(f"{OD_REL}/slideMaster", "../slideMasters/slideMaster1.xml")])),
        ("ppt/slideMasters/slideMaster1.xml", master),
        ("ppt/slideMasters/_rels/slideMaster1.xml.rels", rels([
            (f"{OD_REL}/slideLayout", "../slideLayouts/slideLayout1.xml"),
            (f"{OD_REL}/theme", "../theme/theme1.xml")])),
        ("ppt/theme/theme1.xml", theme),
        ("docProps/core.xml", core_xml("Cairn in one slide")),
        ("docProps/app.xml", app_xml("Microsoft Office PowerPoint")),
    ])


ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
          'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
          'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
          'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
          'xmlns:dc="http://purl.org/dc/elements/1.1/" '
          'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"')


def odf(path: Path, kind: str) -> bytes:
    """An OpenDocument package: `mimetype` first, stored, no extra field."""
    mime = f"application/vnd.oasis.opendocument.{kind}"
    bodies = {
        "text": '<office:text><text:h text:outline-level="1">Notes</text:h>'
                '<text:p>Pin the site before Friday.</text:p><text:p>Ask about the S3 costs.</text:p></office:text>',
        "spreadsheet": '<office:spreadsheet><table:table table:name="Sheet1">'
                       + "".join(f'<table:table-row><table:table-cell office:value-type="string"><text:p>{m}</text:p></table:table-cell>'
                                 f'<table:table-cell office:value-type="float" office:value="{v}"><text:p>{v}</text:p></table:table-cell></table:table-row>'
                                 for m, v in [("Jan", 1200), ("Feb", 1350), ("Mar", 1610)])
                       + '</table:table></office:spreadsheet>',
        "presentation": '<office:presentation><draw:page draw:name="page1" draw:master-page-name="Default">'
                        '<draw:frame presentation:class="title" svg:x="2cm" svg:y="1cm" svg:width="24cm" svg:height="3cm">'
                        '<draw:text-box><text:p>Cairn</text:p></draw:text-box></draw:frame></draw:page></office:presentation>',
        "graphics": '<office:drawing><draw:page draw:name="page1" draw:master-page-name="Default">'
                    '<draw:rect svg:x="2cm" svg:y="2cm" svg:width="6cm" svg:height="4cm"><text:p>box</text:p></draw:rect>'
                    '<draw:ellipse svg:x="10cm" svg:y="2cm" svg:width="4cm" svg:height="4cm"/></draw:page></office:drawing>',
    }
    content = xml(f'<office:document-content {ODF_NS} office:version="1.3"><office:body>{bodies[kind]}</office:body></office:document-content>')
    styles = xml(f"""
        <office:document-styles {ODF_NS} office:version="1.3"><office:styles><style:default-style style:family="paragraph">
        <style:text-properties fo:font-size="12pt"/></style:default-style></office:styles>
        <office:automatic-styles><style:page-layout style:name="PM1"><style:page-layout-properties fo:page-width="21cm" fo:page-height="29.7cm"/></style:page-layout></office:automatic-styles>
        <office:master-styles><style:master-page style:name="Default" style:page-layout-name="PM1"/></office:master-styles></office:document-styles>""")
    meta = xml(f"""
        <office:document-meta {ODF_NS} office:version="1.3"><office:meta><meta:generator>LibreOffice/7.6.4.1$Linux_X86_64</meta:generator>
        <dc:title>{path.stem}</dc:title><meta:creation-date>{ISO[:-1]}</meta:creation-date><dc:date>{ISO[:-1]}</dc:date></office:meta></office:document-meta>""")
    files = [("content.xml", "text/xml"), ("styles.xml", "text/xml"), ("meta.xml", "text/xml")]
    manifest = xml(
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
        f'<manifest:file-entry manifest:full-path="/" manifest:version="1.3" manifest:media-type="{mime}"/>'
        + "".join(f'<manifest:file-entry manifest:full-path="{p}" manifest:media-type="{t}"/>' for p, t in files)
        + '</manifest:manifest>')
    return write_zip(path, [("mimetype", mime.encode(), zipfile.ZIP_STORED),
                            ("content.xml", content), ("styles.xml", styles),
                            ("meta.xml", meta), ("META-INF/manifest.xml", manifest)])


def epub(path: Path) -> bytes:
    xhtml = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
             '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="en" xml:lang="en">\n'
             '<head><title>{title}</title></head>\n<body>{body}</body>\n</html>\n')
    container = xml("""
        <container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
        <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>""")
    opf = xml(f"""
        <package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid" xml:lang="en">
        <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
        <dc:identifier id="uid">urn:uuid:6f1c2a5e-8d3b-4c1e-9a55-0b7e2d9c4f10</dc:identifier>
        <dc:title>A Walk in the Merkle Forest</dc:title><dc:creator>Ada Lovelace</dc:creator><dc:language>en</dc:language>
        <meta property="dcterms:modified">{ISO}</meta></metadata>
        <manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
        <item id="ch1" href="chapter1.xhtml" media-type="application/xhtml+xml"/></manifest>
        <spine><itemref idref="ch1"/></spine></package>""")
    nav = xhtml.format(title="Contents", body='<nav epub:type="toc" id="toc"><h1>Contents</h1><ol>'
                                               '<li><a href="chapter1.xhtml">Chapter 1</a></li></ol></nav>')
    chapter = xhtml.format(title="Chapter 1", body="<h1>Chapter 1</h1>" + "".join(
        f"<p>{' '.join(Random(f'epub{i}').choices(WORDS, k=40))}.</p>" for i in range(12)))
    return write_zip(path, [("mimetype", b"application/epub+zip", zipfile.ZIP_STORED),
                            ("META-INF/container.xml", container),
                            ("OEBPS/content.opf", opf),
                            ("OEBPS/nav.xhtml", nav.encode()),
                            ("OEBPS/chapter1.xhtml", chapter.encode())])


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Writes files (path -> bytes) under root, modes 644/755, fixed mtimes."""
    for name, data in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.chmod(p, 0o644)
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for f in filenames:
            os.utime(os.path.join(dirpath, f), (EPOCH, EPOCH))
        os.chmod(dirpath, 0o755)
        os.utime(dirpath, (EPOCH, EPOCH))


def jdk_jars(docs: Path, work: Path) -> tuple[Path, Path]:
    classes = work / "classes"
    write_tree(classes, {
        "com/example/App.class": class_file("com/example/App"),
        "com/example/Greeter.class": class_file("com/example/Greeter"),
        "app.properties": b"greeting=Hello from Cairn\nversion=1.4.2\n",
    })
    manifest = work / "manifest.txt"
    manifest.write_bytes(b"Main-Class: com.example.App\nImplementation-Title: cairn-example\n"
                         b"Implementation-Version: 1.4.2\n")
    webapp = work / "webapp"
    write_tree(webapp, {
        "index.html": b"<!doctype html><title>Site</title><h1>It works</h1>\n",
        "css/site.css": b"body { font-family: sans-serif; }\n",
        "WEB-INF/web.xml": xml("""
            <web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
            <display-name>site</display-name>
            <servlet><servlet-name>hello</servlet-name><servlet-class>com.example.HelloServlet</servlet-class></servlet>
            <servlet-mapping><servlet-name>hello</servlet-name><url-pattern>/hello</url-pattern></servlet-mapping></web-app>"""),
        "WEB-INF/classes/com/example/HelloServlet.class": class_file("com/example/HelloServlet"),
    })
    jar, war = docs / "app.jar", docs / "site.war"
    date = f"--date={ISO}"
    run(["jar", "--create", "--file", str(jar), "--manifest", str(manifest), date, "-C", str(classes), "."])
    run(["jar", "--create", "--file", str(war), date, "-C", str(webapp), "."])
    return jar, war


def apk(path: Path) -> bytes:
    # Binary XML, dex and resource table headers, then seeded bytes.
    entries = [
        ("AndroidManifest.xml", b"\x03\x00\x08\x00" + struct.pack("<I", 2052) + rand("axml", 2044)),
        ("classes.dex", b"dex\n035\x00" + rand("dex", 24_000)),
        ("res/layout/activity_main.xml", b"\x03\x00\x08\x00" + struct.pack("<I", 1024) + rand("layout", 1016)),
        ("res/mipmap-mdpi/ic_launcher.png", png(48, 48, "apk-icon")),
        # Android 11+ wants resources.arsc stored, aligned.
        ("resources.arsc", b"\x02\x00\x0c\x00" + struct.pack("<I", 4096) + rand("arsc", 4088), zipfile.ZIP_STORED),
    ]
    mf = digest_manifest(entries, "Manifest-Version: 1.0\r\nBuilt-By: Signflinger\r\nCreated-By: Android Gradle 8.2.2", ("SHA-256",))
    sf = (b"Signature-Version: 1.0\r\nCreated-By: 1.0 (Android)\r\nSHA-256-Digest-Manifest: "
          + base64.b64encode(hashlib.sha256(mf).digest()) + b"\r\nX-Android-APK-Signed: 2, 3\r\n\r\n")
    entries += [("META-INF/MANIFEST.MF", mf), ("META-INF/CERT.SF", sf),
                ("META-INF/CERT.RSA", b"\x30\x82\x05\x8a\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07\x02" + rand("rsa", 1400))]
    return write_zip(path, entries)


def aab(path: Path) -> bytes:
    # An app bundle's layout: modules with protobuf manifests and tables.
    entries = [
        ("BundleConfig.pb", b"\x0a\x07\x0a\x058.2.2" + rand("bundlecfg", 60)),
        ("base/manifest/AndroidManifest.xml", b"\x0a\x0f" + rand("pbmanifest", 1500)),
        ("base/dex/classes.dex", b"dex\n035\x00" + rand("aabdex", 24_000)),
        ("base/resources.pb", b"\x0a\x04" + rand("respb", 3000)),
        ("base/res/mipmap-mdpi/ic_launcher.png", png(48, 48, "aab-icon")),
        ("base/root/META-INF/com/android/build/gradle/app-metadata.properties",
         b"appMetadataVersion=1.1\nandroidGradlePluginVersion=8.2.2\n"),
    ]
    entries.append(("META-INF/MANIFEST.MF", digest_manifest(
        entries, "Manifest-Version: 1.0\r\nCreated-By: 17.0.9 (Oracle Corporation)", ("SHA-256",))))
    return write_zip(path, entries)


def plist(body: str) -> bytes:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
            f'<plist version="1.0">\n<dict>\n{body}\n</dict>\n</plist>\n').encode()


def ipa(path: Path) -> bytes:
    info = plist("\n".join(f"<key>{k}</key><string>{v}</string>" for k, v in [
        ("CFBundleIdentifier", "org.example.cairn"), ("CFBundleName", "Cairn"),
        ("CFBundleExecutable", "Cairn"), ("CFBundleShortVersionString", "1.4.2"),
        ("CFBundleVersion", "142"), ("CFBundlePackageType", "APPL"), ("MinimumOSVersion", "15.0")]))
    return write_zip(path, [
        ("Payload/", b""),
        ("Payload/Cairn.app/", b""),
        ("Payload/Cairn.app/Info.plist", info),
        ("Payload/Cairn.app/Cairn", b"\xcf\xfa\xed\xfe\x0c\x00\x00\x01" + rand("macho", 30_000)),
        ("Payload/Cairn.app/AppIcon60x60@2x.png", png(60, 60, "ipa-icon")),
        ("Payload/Cairn.app/PkgInfo", b"APPL????"),
        ("Payload/Cairn.app/_CodeSignature/CodeResources", plist("<key>files</key><dict/>")),
    ])


def xpi(path: Path) -> bytes:
    manifest = json.dumps({
        "manifest_version": 2, "name": "Cairn uploader", "version": "1.4.2",
        "description": "Send the page to Cairn.",
        "browser_specific_settings": {"gecko": {"id": "uploader@cairn.example"}},
        "background": {"scripts": ["background.js"]},
        "permissions": ["activeTab", "contextMenus"],
        "icons": {"48": "icons/icon-48.png"}}, indent=2).encode()
    entries = [("manifest.json", manifest),
               ("background.js", b"browser.contextMenus.create({id: 'cairn', title: 'Send to Cairn'});\n"),
               ("icons/icon-48.png", png(48, 48, "xpi-icon"))]
    mf = digest_manifest(entries, "Manifest-Version: 1.0", ("SHA1", "SHA256"), eol="\n")
    return write_zip(path, [("META-INF/mozilla.rsa", b"\x30\x82\x13\x1f" + rand("mozrsa", 1200)),
                            ("META-INF/mozilla.sf", b"Signature-Version: 1.0\nSHA1-Digest-Manifest: "
                             + base64.b64encode(hashlib.sha1(mf).digest()) + b"\n"),
                            ("META-INF/manifest.mf", mf)] + entries)


def nupkg(path: Path) -> bytes:
    nuspec = ('<?xml version="1.0" encoding="utf-8"?>\n'
              '<package xmlns="http://schemas.microsoft.com/packaging/2013/05/nuspec.xsd">\n'
              '  <metadata>\n    <id>Cairn.Client</id>\n    <version>1.4.2</version>\n'
              '    <authors>Cairn</authors>\n    <license type="expression">MIT</license>\n'
              '    <description>A client for the Cairn upload service.</description>\n'
              '    <dependencies><group targetFramework="net8.0" /></dependencies>\n'
              '  </metadata>\n</package>\n').encode()
    psmdcp = "package/services/metadata/core-properties/2f3b8a7c41d94e0a9b6c5d1e0f7a8b9c.psmdcp"
    return write_zip(path, [
        ("_rels/.rels", xml(f"""
            <Relationships xmlns="{REL_NS}">
            <Relationship Type="http://schemas.microsoft.com/packaging/2010/07/manifest" Target="/Cairn.Client.nuspec" Id="R1a2b3c4d5e6f7081"/>
            <Relationship Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="/{psmdcp}" Id="R9f8e7d6c5b4a3921"/></Relationships>""")),
        ("Cairn.Client.nuspec", nuspec),
        ("lib/net8.0/Cairn.Client.dll", b"MZ\x90\x00\x03\x00\x00\x00" + rand("dll", 12_000)),
        (psmdcp, xml("""
            <coreProperties xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns="http://schemas.openxmlformats.org/package/2006/metadata/core-properties">
            <dc:creator>Cairn</dc:creator><dc:description>A client for the Cairn upload service.</dc:description>
            <dc:identifier>Cairn.Client</dc:identifier><version>1.4.2</version><lastModifiedBy>NuGet.Build.Tasks.Pack, Version=6.8.0</lastModifiedBy></coreProperties>""")),
        ("[Content_Types].xml", content_types({}, {"psmdcp": CORE_CT, "dll": "application/octet",
                                                   "nuspec": "application/octet"})),
    ])


def vsix(path: Path) -> bytes:
    manifest = xml("""
        <PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011" xmlns:d="http://schemas.microsoft.com/developer/vsx-schema-design/2011">
        <Metadata><Identity Language="en-US" Id="cairn-upload" Version="1.4.2" Publisher="cairn"/>
        <DisplayName>Cairn Upload</DisplayName><Description xml:space="preserve">Upload the workspace to Cairn.</Description>
        <Categories>Other</Categories></Metadata>
        <Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation><Dependencies/>
        <Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" Addressable="true"/>
        <Asset Type="Microsoft.VisualStudio.Services.Content.Details" Path="extension/README.md" Addressable="true"/></Assets>
        </PackageManifest>""")
    package = json.dumps({"name": "cairn-upload", "publisher": "cairn", "version": "1.4.2",
                          "engines": {"vscode": "^1.85.0"}, "main": "./out/extension.js",
                          "activationEvents": ["onCommand:cairn.upload"]}, indent=2).encode()
    return write_zip(path, [
        ("extension.vsixmanifest", manifest),
        ("[Content_Types].xml", content_types({}, {"vsixmanifest": "text/xml", "json": "application/json",
                                                   "js": "application/javascript", "md": "text/markdown"})),
        ("extension/package.json", package),
        ("extension/README.md", b"# Cairn Upload\n\nUpload the workspace to Cairn.\n"),
        ("extension/out/extension.js", b"exports.activate = function (ctx) { /* ... */ };\n"),
    ])


def kmz(path: Path) -> bytes:
    placemarks = "".join(
        f"<Placemark><name>{c}</name><styleUrl>#pin</styleUrl><Point><coordinates>{lon},{lat},0</coordinates></Point></Placemark>"
        for c, lon, lat in [("Lyon", 4.8357, 45.7640), ("Porto", -8.6291, 41.1579), ("Tartu", 26.7290, 58.3780)])
    doc = ('<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document>'
           '<name>Mirrors</name><Style id="pin"><IconStyle><Icon><href>files/pin.png</href></Icon></IconStyle></Style>'
           f'{placemarks}</Document></kml>\n').encode()
    return write_zip(path, [("doc.kml", doc), ("files/pin.png", png(32, 32, "kmz-pin"))])


def three_mf(path: Path) -> bytes:
    vertices = [(0, 0, 0), (40, 0, 0), (20, 35, 0), (20, 12, 30)]
    triangles = [(0, 2, 1), (0, 1, 3), (1, 2, 3), (2, 0, 3)]
    model = xml(
        '<model unit="millimeter" xml:lang="en-US" xmlns="http://schemas.microsoft.com/3dmanufacturing/core/2015/02">'
        '<metadata name="Title">Tetrahedron</metadata><resources><object id="1" type="model"><mesh><vertices>'
        + "".join(f'<vertex x="{x}" y="{y}" z="{z}"/>' for x, y, z in vertices)
        + "</vertices><triangles>"
        + "".join(f'<triangle v1="{a}" v2="{b}" v3="{c}"/>' for a, b, c in triangles)
        + '</triangles></mesh></object></resources><build><item objectid="1"/></build></model>')
    return write_zip(path, [
        ("[Content_Types].xml", content_types({}, {"model": "application/vnd.ms-package.3dmanufacturing-3dmodel+xml",
                                                   "png": "image/png"})),
        ("_rels/.rels", rels([("http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel", "/3D/3dmodel.model"),
                              ("http://schemas.openxmlformats.org/package/2006/relationships/metadata/thumbnail",
                               "/Metadata/thumbnail.png")])),
        ("3D/3dmodel.model", model),
        ("Metadata/thumbnail.png", png(64, 64, "3mf-thumb")),
    ])


def sketch(path: Path) -> bytes:
    page = "5A1E3C2B-7F4D-4B8E-9C1A-0D2E3F4A5B6C"
    document = {"_class": "document", "do_objectID": "1B2C3D4E-5F60-4718-8293-A4B5C6D7E8F9",
                "assets": {"_class": "assetCollection", "colors": []},
                "pages": [{"_class": "MSJSONFileReference", "_ref_class": "MSImmutablePage", "_ref": f"pages/{page}"}]}
    meta = {"commit": "1c7f8a3", "appVersion": "99.5", "build": 180235, "app": "com.bohemiancoding.sketch3",
            "version": 146, "compatibilityVersion": 99, "created": {"app": "com.bohemiancoding.sketch3", "build": 180235},
            "pagesAndArtboards": {page: {"name": "Page 1", "artboards": {}}}}
    pg = {"_class": "page", "do_objectID": page, "name": "Page 1", "layers": [
        {"_class": "rectangle", "do_objectID": "9E8D7C6B-5A49-4837-A261-504F3E2D1C0B", "name": "Card",
         "frame": {"_class": "rect", "x": 10, "y": 10, "width": 320, "height": 200}}]}
    dump = lambda o: json.dumps(o, separators=(",", ":")).encode()
    return write_zip(path, [("document.json", dump(document)), ("meta.json", dump(meta)),
                            ("user.json", dump({"document": {"pageListHeight": 120}})),
                            (f"pages/{page}.json", dump(pg)),
                            ("previews/preview.png", png(96, 60, "sketch-preview"))])


def python_wheel(docs: Path, work: Path, python: str) -> Path:
    project = work / "wheel-project"
    write_tree(project, {
        "pyproject.toml": textwrap.dedent("""\
            [build-system]
            requires = ["setuptools>=61", "wheel"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "cairn-everyday"
            version = "0.3.1"
            description = "A tiny package, for an upload test"
            requires-python = ">=3.8"

            [tool.setuptools]
            packages = ["cairn_everyday"]
            """).encode(),
        "README.md": b"# cairn-everyday\n",
        "cairn_everyday/__init__.py": b'"""A tiny package."""\n\n__version__ = "0.3.1"\n\n\ndef hello():\n    return "hello"\n',
    })
    built = work / "wheels"
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH), PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_INPUT="1", PYTHONDONTWRITEBYTECODE="1", PIP_NO_CACHE_DIR="1")
    run([python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-q", "-w", str(built), str(project)], env=env)
    wheels = list(built.glob("*.whl"))
    if len(wheels) != 1:
        die(f"pip wheel made {wheels}, not one wheel")
    target = docs / wheels[0].name
    shutil.move(wheels[0], target)
    return target


def documents(out: Path, work: Path, python: str) -> None:
    docs = out / "docs"
    docs.mkdir()
    DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    ODT = "application/vnd.oasis.opendocument.text"
    EPUB = "application/epub+zip"
    JAR = "application/java-archive"

    def add(path: Path, why: str, mime: str | None = None, also_unnamed: bool = False) -> None:
        case(path, out, path.name, "file", why, mime)
        if also_unnamed:
            case(path, out, "file", "file", why + " Sent without a name: the content says what it is.", mime)

    docx(docs / "report.docx", macros=False)
    add(docs / "report.docx", "A Word document is a zip inside, with [Content_Types].xml first.", DOCX, True)
    xlsx(docs / "sheet.xlsx", macros=False)
    add(docs / "sheet.xlsx", "An Excel workbook is an OOXML zip.")
    pptx(docs / "slides.pptx")
    add(docs / "slides.pptx", "A PowerPoint deck is an OOXML zip.")
    docx(docs / "macro.docm", macros=True)
    add(docs / "macro.docm", "A macro-enabled Word document is an OOXML zip with a vbaProject.bin.")
    xlsx(docs / "macro.xlsm", macros=True)
    add(docs / "macro.xlsm", "A macro-enabled workbook is an OOXML zip with a vbaProject.bin.")

    for name, kind in [("notes.odt", "text"), ("table.ods", "spreadsheet"),
                       ("talk.odp", "presentation"), ("drawing.odg", "graphics")]:
        odf(docs / name, kind)
        add(docs / name, f"An OpenDocument {kind} is a zip whose stored `mimetype` comes first.",
            ODT if kind == "text" else None, kind == "text")

    epub(docs / "book.epub")
    add(docs / "book.epub", "An EPUB is a zip whose stored `mimetype` comes first.", EPUB, True)

    jar, war = jdk_jars(docs, work)
    add(jar, "A JAR, as the JDK's jar tool writes it, is a zip of classes.", JAR, True)
    add(war, "A WAR, as the JDK's jar tool writes it, is a zip of a web application.")

    apk(docs / "app.apk")
    add(docs / "app.apk", "An Android package is a zip.", None, True)
    aab(docs / "app.aab")
    add(docs / "app.aab", "An Android App Bundle is a zip.")
    ipa(docs / "app.ipa")
    add(docs / "app.ipa", "An iOS app is a zip with a Payload folder.")
    xpi(docs / "addon.xpi")
    add(docs / "addon.xpi", "A Firefox add-on is a signed zip.")
    nupkg(docs / "package.nupkg")
    add(docs / "package.nupkg", "A NuGet package is an OPC zip.")
    vsix(docs / "ext.vsix")
    add(docs / "ext.vsix", "A VS Code extension is an OPC zip.")
    kmz(docs / "places.kmz")
    add(docs / "places.kmz", "Google Earth's KMZ is a zipped KML.")
    three_mf(docs / "model.3mf")
    add(docs / "model.3mf", "A 3D Manufacturing Format model is an OPC zip.")
    sketch(docs / "design.sketch")
    add(docs / "design.sketch", "A Sketch design is a zip of JSON.")

    whl = python_wheel(docs, work, python)
    add(whl, "A Python wheel, as pip builds it, is a zip.", None, True)


# ---------------------------------------------------------- 2. compressions

def compressions(out: Path) -> None:
    d = out / "compressed"
    d.mkdir()
    sources = [
        ("dump.sql.gz", sql_dump(), ["gzip", "-n", "-9", "-c"], "application/gzip",
         "A database dump compressed by gzip is one file, not an archive."),
        ("data.csv.xz", csv_text(), ["xz", "-6", "-c"], "application/x-xz",
         "A CSV compressed by xz is one file, not an archive."),
        ("app.log.zst", log_text(), ["zstd", "-q", "-19", "-c"], "application/zstd",
         "A log compressed by zstd is one file, not an archive."),
        ("notes.json.bz2", json_text(), ["bzip2", "-9", "-c"], "application/x-bzip2",
         "A JSON file compressed by bzip2 is one file, not an archive."),
    ]
    for name, text, command, mime, why in sources:
        (d / name).write_bytes(run(command, stdin=text))
        case(d / name, out, name, "file", why, mime)
    case(d / "dump.sql.gz", out, "file", "file",
         "A gzip sent without a name is one file: nothing says it holds a tar.", "application/gzip")


# ------------------------------------------------------------ 3. look-alikes

def lookalikes(out: Path) -> None:
    d = out / "lookalike"
    d.mkdir()
    size = 64 * 1024
    magics = [
        ("blob-gzip.bin", b"\x1f\x8b"),
        ("blob-gzip-deflate.bin", b"\x1f\x8b\x08\x00"),
        ("blob-bzip2.bin", b"BZh9"),
        ("blob-zip.bin", b"PK\x03\x04"),
        ("blob-zip-end.bin", b"PK\x05\x06"),
        ("blob-xz.bin", b"\xfd7zXZ\x00"),
        ("blob-zstd.bin", b"\x28\xb5\x2f\xfd"),
        ("blob-7z.bin", b"7z\xbc\xaf\x27\x1c"),
    ]
    for name, magic in magics:
        data = magic + rand(name, size - len(magic))
        (d / name).write_bytes(data)
        case(d / name, out, name, "file",
             f"Random bytes that merely begin with the magic {magic.hex()} are a file.")
    data = bytearray(rand("blob-ustar.bin", size))
    data[257:263] = b"ustar\x00"
    (d / "blob-ustar.bin").write_bytes(bytes(data))
    case(d / "blob-ustar.bin", out, "blob-ustar.bin", "file",
         "Random bytes with `ustar` at offset 257 (a tar header's magic) are a file.")


# ------------------------------------------------------- 4. broken archives

def broken(out: Path, work: Path) -> None:
    d = out / "broken"
    d.mkdir()
    real_zip = (out / "archives" / "site.zip").read_bytes()
    (d / "site.zip").write_bytes(real_zip[: len(real_zip) // 2])
    case(d / "site.zip", out, "site.zip", "invalid_archive",
         "A zip cut to half its length has lost its central directory.")

    (d / "backup.tar.gz").write_bytes(run(["gzip", "-n", "-c"], stdin=log_text(800, "backup")))
    case(d / "backup.tar.gz", out, "backup.tar.gz", "invalid_archive",
         "A good gzip of plain text, not of a tar, named .tar.gz.")

    (d / "photos.7z").write_bytes(b"7z\xbc\xaf\x27\x1c" + rand("photos.7z", 64 * 1024 - 6))
    case(d / "photos.7z", out, "photos.7z", "invalid_archive",
         "Random bytes after the 7z signature are no 7z archive.")

    (d / "data.tar").write_bytes(rand("data.tar", 64 * 1024))
    case(d / "data.tar", out, "data.tar", "invalid_archive",
         "Random bytes named .tar have no valid tar header.")

    logs = work / "logs"
    write_tree(logs, {f"app-2024-03-{day:02d}.log": log_text(1500, f"logs{day}") for day in (12, 13, 14)})
    whole = work / "logs.tar.xz"
    run(["tar", "--sort=name", f"--mtime=@{EPOCH}", "--owner=0", "--group=0", "--numeric-owner",
         "-cJf", str(whole), "-C", str(logs), "."])
    data = whole.read_bytes()
    (d / "logs.tar.xz").write_bytes(data[: len(data) * 6 // 10])
    case(d / "logs.tar.xz", out, "logs.tar.xz", "invalid_archive",
         "A tar.xz cut to 60% of its length is a truncated xz stream.")


# ---------------------------------------------------------- 5. real archives

def site_files() -> dict[str, bytes]:
    photo = (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
             + rand("photo.jpg", 300 * 1024) + b"\xff\xd9")
    return {
        "index.html": b"<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Cairn</title>"
                      b"<link rel=\"stylesheet\" href=\"css/style.css\"></head>\n<body><h1>Hello</h1>"
                      b"<img src=\"img/photo.jpg\" alt=\"A cairn\"><img src=\"img/logo.svg\" alt=\"\"></body>\n</html>\n",
        "README.md": b"# Site\n\nPublished with Cairn.\n",
        "css/style.css": b"body { margin: 0 auto; max-width: 40rem; font: 16px/1.5 sans-serif; }\n"
                         b"img { max-width: 100%; }\n",
        "img/photo.jpg": photo,
        "img/logo.svg": b'<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32">'
                        b'<circle cx="16" cy="16" r="14" fill="#4472c4"/></svg>\n',
    }


def archives(out: Path) -> None:
    d = out / "archives"
    d.mkdir()
    wrapped = out / "tree"          # holds exactly site/
    tree = wrapped / "site"         # the tree the unwrapped archives hold
    write_tree(tree, site_files())
    os.utime(wrapped, (EPOCH, EPOCH))

    run(["zip", "-q", "-r", "-X", str(d / "site.zip"), "."], cwd=tree)
    case(d / "site.zip", out, "site.zip", "archive",
         "`zip -r` run inside the tree: entries relative to the root.", tree=tree)

    tar = ["tar", "--sort=name", f"--mtime=@{EPOCH}", "--owner=0", "--group=0", "--numeric-owner"]
    for name, flags, why in [
        ("site.tar.gz", ["-czf"], "`tar -czf` of the tree's contents (with GNU tar's ./ root entry)."),
        ("site.tar.bz2", ["-cjf"], "`tar -cjf` of the tree's contents."),
        ("site.tar.xz", ["-cJf"], "`tar -cJf` of the tree's contents."),
        ("site.tar.zst", ["--zstd", "-cf"], "`tar --zstd -cf` of the tree's contents."),
    ]:
        run(tar + flags + [str(d / name), "-C", str(tree), "."])
        case(d / name, out, name, "archive", why, tree=tree)

    # .tgz the other everyday way: tar to a pipe, gzip -9.
    plain = run(tar + ["-cf", "-", "-C", str(tree), "."])
    (d / "site.tgz").write_bytes(run(["gzip", "-9", "-n", "-c"], stdin=plain))
    case(d / "site.tgz", out, "site.tgz", "archive", "`tar -cf - . | gzip -9`, named .tgz.", tree=tree)

    run(["zip", "-q", "-r", "-X", str(d / "site-wrapped.zip"), "site/"], cwd=wrapped)
    case(d / "site-wrapped.zip", out, "site-wrapped.zip", "archive",
         "`zip -r site.zip site/`: one top-level folder, kept as it is.", tree=wrapped)


# ------------------------------------------------------------- self-check

def tree_listing(root: Path) -> dict[str, bytes | None]:
    """path -> bytes for files, None for directories; the root itself left out."""
    found: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        if rel != Path("."):
            found[rel.as_posix()] = None
        for f in filenames:
            found[(rel / f).as_posix()] = (Path(dirpath) / f).read_bytes()
    return found


def archive_listing(path: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}

    def put(name: str, data: bytes | None) -> None:
        name = name.strip("/")
        while name.startswith("./"):
            name = name[2:]
        if name in ("", "."):
            return
        assert name not in found, f"{path}: {name} twice"
        found[name] = data

    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                put(info.filename, None if info.is_dir() else z.read(info))
        return found
    if path.suffix == ".zst":
        stream = io.BytesIO(run(["zstd", "-d", "-q", "-c", str(path)]))
        t = tarfile.open(fileobj=stream, mode="r:")
    else:
        t = tarfile.open(path, mode="r:*")
    with t:
        for m in t:
            assert m.isdir() or m.isfile(), f"{path}: {m.name} is neither file nor directory"
            put(m.name, t.extractfile(m).read() if m.isfile() else None)
    return found


def self_check(out: Path) -> None:
    """Fails unless every case is what the manifest says it is."""
    for c in CASES:
        path = out / c["file"]
        assert path.is_file(), c
        name = c["send_as"]
        if c["expect"] == "archive":
            assert archive_listing(path) == tree_listing(out / c["tree"]), f"{path} != {c['tree']}"
        elif c["expect"] == "file" and c["file"].startswith("docs/"):
            with zipfile.ZipFile(path) as z:
                assert z.testzip() is None, path
                first = z.infolist()[0]
                if path.suffix in (".odt", ".ods", ".odp", ".odg", ".epub"):
                    raw = path.read_bytes()
                    assert first.filename == "mimetype" and first.compress_type == zipfile.ZIP_STORED, path
                    assert raw[26:30] == b"\x08\x00\x00\x00" and raw[30:38] == b"mimetype", path
                if path.suffix in (".docx", ".xlsx", ".pptx", ".docm", ".xlsm"):
                    assert first.filename == "[Content_Types].xml", path
        elif c["expect"] == "invalid_archive":
            if name.endswith(".7z"):
                # No 7z reader here: the start header's CRC-32 must not match.
                raw = path.read_bytes()
                if zlib.crc32(raw[12:32]) == int.from_bytes(raw[8:12], "little"):
                    die(f"self-check: {path} has a valid 7z start header")
                continue
            try:
                if name.endswith(".zip"):
                    zipfile.ZipFile(path).testzip()
                else:
                    with tarfile.open(path, mode="r:*") as t:
                        for m in t:
                            if m.isfile():
                                t.extractfile(m).read()
            except Exception:
                continue
            die(f"self-check: {path} opened as an archive")
    counts = {}
    for c in CASES:
        counts[c["expect"]] = counts.get(c["expect"], 0) + 1
    print(f"make_files.py: {len(CASES)} cases " + json.dumps(counts, sort_keys=True), file=sys.stderr)


# ------------------------------------------------------------------- main

def main() -> None:
    if len(sys.argv) != 2:
        die("usage: python3 make_files.py OUT_DIR")
    out = Path(sys.argv[1]).resolve()
    try:
        python = check_tools()
    except Missing as e:
        die(str(e))
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("docs", "compressed", "lookalike", "broken", "archives", "tree"):
        shutil.rmtree(out / sub, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="cairn-everyday-") as tmp:
        work = Path(tmp)
        try:
            archives(out)
            broken(out, work)
            documents(out, work, python)
            compressions(out)
            lookalikes(out)
        except Missing as e:
            die(str(e))
    self_check(out)
    (out / "manifest.json").write_text(json.dumps(CASES, indent=2) + "\n")


if __name__ == "__main__":
    main()
