"""Read py-spy's raw stacks: a summary of where the time goes, and a flame graph as SVG.

    .venv/bin/python bench/flame.py var/bench/<run>/profile.txt --svg profile.svg --top 20

The input is `py-spy record --format raw`: one line per distinct stack, frames from the root
separated by ";", then the sample count. bench/load.py --profile records it and calls this.
Frames are merged by function and file, without the line, so the calls one function makes
from several lines add up to one box. Samples are only those of busy threads (py-spy leaves out
threads waiting in the kernel, the event loop's epoll wait included).

With --nonblocking py-spy reads the stacks while the server runs, so some are torn (frames of
two moments glued together, or a stack without its root): the own-time figures hold up, the
totals of the outer frames come out low. bench/load.py records without it unless asked.
"""

from __future__ import annotations

import argparse
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

_LINE = re.compile(r":\d+\)$")
_FILE = re.compile(r"\((.*)\)$")


def _frame(raw: str) -> str:
    """'f (mps/actors/company.py:347)' -> 'f (mps/actors/company.py)'."""
    return _LINE.sub(")", raw)


def _package(frame: str) -> str:
    """The package a frame's code belongs to: mps.http, aiohttp, asyncio, sqlite3..."""
    found = _FILE.search(frame)
    path = found.group(1) if found else frame
    parts = [p for p in path.split("/") if p]
    if not parts or path.startswith("<"):
        return path
    if parts[0] == "mps" and len(parts) > 2:
        return f"mps.{parts[1]}"
    if len(parts) == 1:
        return parts[0].removesuffix(".py")
    return parts[0]


def read_stacks(path: Path) -> list[tuple[list[str], int]]:
    stacks = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append(([_frame(f) for f in stack.split(";")], int(count)))
    return stacks


def summary(stacks: list[tuple[list[str], int]], top: int) -> str:
    total = sum(n for _, n in stacks) or 1
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    for frames, n in stacks:
        own[frames[-1]] += n
        packages[_package(frames[-1])] += n
        for frame in set(frames):
            inclusive[frame] += n
    out = [f"{total:,} samples of busy threads"]
    for title, counts in (
        ("own time by package", packages),
        ("own time by function (the frame on top of the stack)", own),
        ("total time by function (on the stack anywhere)", inclusive),
    ):
        out.append(f"\n{title}:")
        out += [f"  {n / total:6.1%}  {name}" for name, n in counts.most_common(top)]
    return "\n".join(out)


@dataclass
class _Node:
    name: str
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _tree(stacks: list[tuple[list[str], int]]) -> _Node:
    root = _Node("all")
    for frames, n in stacks:
        root.count += n
        node = root
        for frame in frames:
            node = node.children.setdefault(frame, _Node(frame))
            node.count += n
    return root


def _depth(node: _Node) -> int:
    return 1 + max((_depth(c) for c in node.children.values()), default=0)


def flame_svg(stacks: list[tuple[list[str], int]], title: str, width: int = 1600) -> str:
    """A flame graph: the root at the bottom, each box as wide as its share of the samples,
    its callers below it; hover a box for its name and share."""
    root = _tree(stacks)
    row, top = 17, 40
    height = top + row * _depth(root) + 10
    scale = (width - 20) / max(root.count, 1)
    boxes: list[str] = []

    def draw(node: _Node, x: float, depth: int) -> None:
        w = node.count * scale
        if w < 0.5:
            return
        y = height - 10 - row * (depth + 1)
        share = node.count / max(root.count, 1)
        hue = zlib.crc32(_package(node.name).encode()) % 60
        label = escape(node.name)
        text = label[: int(w / 7)] if w > 30 else ""
        boxes.append(
            f"<g><title>{label} ({share:.2%}, {node.count} samples)</title>"
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" '
            f'fill="hsl({hue},85%,60%)" rx="2"/>'
            f'<text x="{x + 3:.1f}" y="{y + 12}">{text}</text></g>'
        )
        for child in sorted(node.children.values(), key=lambda c: c.name):
            draw(child, x, depth + 1)
            x += child.count * scale

    draw(root, 10, 0)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="11">'
        f'<rect width="100%" height="100%" fill="#fafafa"/>'
        f'<text x="10" y="24" font-size="15">{escape(title)}</text>' + "".join(boxes) + "</svg>\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("raw", type=Path, help="py-spy record --format raw output")
    parser.add_argument("--svg", type=Path, help="write a flame graph here")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    stacks = read_stacks(args.raw)
    print(summary(stacks, args.top))
    if args.svg:
        args.svg.write_text(flame_svg(stacks, f"{args.raw} ({len(stacks)} distinct stacks)"))
        print(f"\nflame graph: {args.svg}")


if __name__ == "__main__":
    main()
