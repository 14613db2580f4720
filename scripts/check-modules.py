#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check the library's sources against its module graph (lib/meson.build, doc/architecture.md).

A module may include the headers of, and call the functions of, the modules it uses (transitively), and no
other: an arrow against the graph fails, unless lib/meson.build lists it as a known exception; an exception
no arrow needs any more fails too, so the list shrinks as the arrows go. Arrows are read twice: from the
sources' #include "..." lines, and from each module's static library (a symbol it needs that another
module's library defines). The declared graph must have no circle; with every arrow inside the graph, the
code has none either.

The tests run it from meson (the module-graph test); by hand:
    python3 scripts/check-modules.py --src . --module core:core+.: --module wire:wire:core ...
"""
import argparse
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--src', required=True, help='the source tree (its lib/ folder holds the modules)')
    p.add_argument('--module', action='append', default=[], metavar='NAME:FOLDERS:USES',
                   help='a module, its folders under lib/ (joined by +) and the modules it uses (comma-separated)')
    p.add_argument('--exceptions', action='append', default=[], metavar='NAME:MODULES',
                   help='modules NAME still reaches against the graph (known exceptions)')
    p.add_argument('--lib', action='append', default=[], metavar='NAME:PATH',
                   help="a module's static library, for the symbol arrows")
    p.add_argument('--plant', action='append', default=[], metavar='FILE:HEADER',
                   help='read FILE (under lib/) as if it also included HEADER (to see the check fail)')
    return p.parse_args(argv)


def split_list(text):
    return [x for x in text.split(',') if x]


def find_cycle(graph):
    """A circle in graph (node: set of nodes) as a list of nodes, or None."""
    state = {}

    def visit(node, path):
        state[node] = 'open'
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 'open':
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path)
                if found:
                    return found
        path.pop()
        state[node] = 'done'
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


class Graph:
    def __init__(self, args):
        self.folder, self.uses = {}, {}
        for spec in args.module:
            name, folders, uses = spec.split(':')
            self.folder[name] = [os.path.normpath(os.path.join(args.src, 'lib', f)) for f in folders.split('+')]
            self.uses[name] = set(split_list(uses))
        self.exceptions = {}
        for spec in args.exceptions:
            name, mods = spec.split(':')
            self.exceptions[name] = set(split_list(mods))
        self.errors = []

    def closure(self, name):
        seen, todo = set(), list(self.uses[name])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(self.uses[m])
        return seen

    def module_of_path(self, path):
        """The module one of whose folders holds path (not in a subfolder)."""
        d = os.path.dirname(os.path.normpath(path))
        for name, folders in self.folder.items():
            if d in folders:
                return name
        return None

    def check_declared(self):
        for name, uses in self.uses.items():
            for u in uses | self.exceptions.get(name, set()):
                if u not in self.uses:
                    self.errors.append(f'module {name} uses {u}, which is not a module')
        cycle = find_cycle(self.uses)
        if cycle:
            self.errors.append('the declared module graph has a circle: ' + ' -> '.join(cycle))


def source_files(graph, src):
    files = []
    for root in (os.path.join(src, 'lib'), os.path.join(src, 'drivers')):
        for d, _, names in os.walk(root):
            files += [os.path.join(d, n) for n in sorted(names) if n.endswith(('.c', '.h'))]
    for f in files:
        if graph.module_of_path(f) is None:
            graph.errors.append(f'{os.path.relpath(f, src)}: in no module folder (lib/meson.build)')
    return [f for f in files if graph.module_of_path(f) is not None]


def include_arrows(graph, files, src, plants):
    """(module, used module, where) for every quoted include of another module's header."""
    owner = {}
    for f in files:
        base = os.path.basename(f)
        if f.endswith('.h'):
            if base in owner:
                graph.errors.append(f'header {base} is in two modules: {owner[base]} and {graph.module_of_path(f)}')
            owner[base] = graph.module_of_path(f)
    arrows = []
    for f in files:
        rel = os.path.relpath(f, src)
        with open(f, encoding='utf-8') as fh:
            headers = INCLUDE.findall(fh.read())
        headers += [h for p, h in plants if os.path.normpath(os.path.join(src, 'lib', p)) == os.path.normpath(f)]
        mod = graph.module_of_path(f)
        for h in headers:
            if h not in owner:
                graph.errors.append(f'{rel}: includes "{h}", the header of no module')
            elif owner[h] != mod:
                arrows.append((mod, owner[h], f'{rel} includes {h}'))
    return arrows


def nm_symbols(path):
    out = subprocess.run(['nm', '--defined-only', '-g', path], capture_output=True, text=True, check=True).stdout
    defined = {line.split()[2] for line in out.splitlines() if len(line.split()) == 3}
    out = subprocess.run(['nm', '-u', '-g', path], capture_output=True, text=True, check=True).stdout
    undefined = {line.split()[-1] for line in out.splitlines() if line.strip() and ':' not in line}
    return defined, undefined


def symbol_arrows(libs):
    """(module, used module, where) for every symbol a module's library needs from another's."""
    syms = {name: nm_symbols(path) for name, path in libs.items()}
    definer = {}
    for name, (defined, _) in syms.items():
        for s in defined:
            definer[s] = name
    arrows = []
    for name, (_, undefined) in syms.items():
        for s in sorted(undefined):
            if s in definer and definer[s] != name:
                arrows.append((name, definer[s], f'calls or reads {s}'))
    return arrows


def check_arrows(graph, arrows, complete):
    """complete: the arrows include the symbol ones, so an exception none of them uses is stale."""
    used_exceptions = set()
    for mod, used, where in arrows:
        if used in graph.closure(mod):
            continue
        if used in graph.exceptions.get(mod, set()):
            used_exceptions.add((mod, used))
            continue
        graph.errors.append(f'{mod} -> {used} runs against the module graph: {where}')
    for mod, excs in graph.exceptions.items() if complete else ():
        for used in excs:
            if (mod, used) not in used_exceptions:
                graph.errors.append(f'known exception {mod} -> {used} is no longer used: remove it (lib/meson.build)')


def main(argv):
    args = parse_args(argv)
    graph = Graph(args)
    graph.check_declared()
    files = source_files(graph, args.src)
    plants = [tuple(p.split(':', 1)) for p in args.plant]
    arrows = include_arrows(graph, files, args.src, plants)
    libs = dict(spec.split(':', 1) for spec in args.lib)
    if libs:
        arrows += symbol_arrows(libs)
    check_arrows(graph, arrows, complete=bool(libs))
    for e in graph.errors:
        print('check-modules: ' + e)
    if graph.errors:
        return 1
    print(f'check-modules: {len(graph.uses)} modules, {len(files)} files, {len(arrows)} arrows between modules: '
          f'all inside the graph ({sum(len(x) for x in graph.exceptions.values())} known exceptions)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
