// The Python side of execute_code: the bootstrap the sandbox runs (`python3 -u -c BOOTSTRAP`) and
// the `hermes_tools` module generated per call with one function per tool the script may call.
//
// The bootstrap keeps the process's stdin and stdout for the line channel to the worker (on
// private descriptors the script's children do not inherit), points the script's stdin at
// /dev/null and its stdout at stderr — the output the model gets — and removes every environment
// variable whose name looks like a secret before any of the script's code runs. The first line
// from the worker carries the module and the script.
import { toolSpec, type Tool } from '../registry.js';

/** Names Hermes treats as secrets in a script's environment (its execute_code env scrub), and PASSWD. */
export const SECRET_ENV_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i;

/** What a script that tries to start a program meets (EPERM from execve), and the model reads in the tool's description. */
export const NO_PROGRAMS = 'The script cannot start programs itself (subprocess, os.system, os.exec* fail with PermissionError): run commands with terminal from hermes_tools, which passes the approval guard.';

// System calls refused to the script (EPERM), per machine: execve and execveat — a program started
// from the script would bypass the approval guard that every terminal command passes (deny globs,
// dangerous-command detection, manual approval) — and ptrace / process_vm_writev, with which it
// could make another process of the sandbox start one. x86-64's x32 calls (nr >= 0x40000000) and
// any other ABI (i386's int 0x80) are refused whole. Installed by the bootstrap with prctl
// (no_new_privs first) once the environment is clean, before the script's first line; inherited by
// every process the script forks. A sandbox that cannot install it runs nothing of the script.
const SECCOMP_ARCHES: Readonly<Record<string, { audit: number; nrs: readonly number[]; x32?: 1 }>> = {
  x86_64: { audit: 0xc000003e, nrs: [59, 322, 101, 311], x32: 1 },
  aarch64: { audit: 0xc00000b7, nrs: [221, 281, 117, 271] },
};

const NO_EXEC = [
  'def _no_exec():',
  `    _arches = ${JSON.stringify(SECCOMP_ARCHES)}`,
  '    _m = os.uname().machine',
  '    if _m not in _arches:',
  "        return 'this sandbox runs on %s, for which execute_code has no system-call filter' % _m",
  '    try:',
  '        import ctypes, struct',
  '    except ImportError as e:',
  "        return 'python3 here has no ctypes (%s)' % e",
  "    _a = _arches[_m]",
  '    _deny, _allow = 0x00050001, 0x7fff0000',
  // ld arch; jeq ours → skip; ret deny; ld nr; [jge 0x40000000 → deny]; jeq nr → deny …; ret allow; ret deny
  "    _checks = ([(0x35, 0x40000000)] if _a.get('x32') else []) + [(0x15, n) for n in _a['nrs']]",
  "    _f = [(0x20, 0, 0, 4), (0x15, 1, 0, _a['audit']), (0x06, 0, 0, _deny), (0x20, 0, 0, 0)]",
  '    _f += [(op, len(_checks) - i, 0, k) for i, (op, k) in enumerate(_checks)]',
  '    _f += [(0x06, 0, 0, _allow), (0x06, 0, 0, _deny)]',
  "    _buf = ctypes.create_string_buffer(b''.join(struct.pack('=HBBI', *x) for x in _f))",
  '    class _Prog(ctypes.Structure):',
  "        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]",
  '    _prog = _Prog(len(_f), ctypes.cast(_buf, ctypes.c_void_p))',
  '    _libc = ctypes.CDLL(None, use_errno=True)',
  '    _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]',
  '    if _libc.prctl(38, 1, None, 0, 0) != 0 or _libc.prctl(22, 2, ctypes.addressof(_prog), 0, 0) != 0:',
  "        return 'prctl: %s' % os.strerror(ctypes.get_errno())",
  '    return None',
  '_why = _no_exec()',
  'if _why is not None:',
  "    sys.stderr.write('execute_code could not stop the script from starting programs (%s); nothing of it ran. Use terminal instead.\\n' % _why)",
  '    sys.exit(1)',
];

export const BOOTSTRAP = [
  'import json, os, re, sys, tempfile, traceback',
  `_secret = re.compile(${JSON.stringify(SECRET_ENV_NAME.source)}, re.I)`,
  // Deleting from os.environ leaves the process's initial environment block (/proc/self/environ)
  // as it was: start again, once, with the clean environment (orig_argv: Python 3.10+).
  '_clean = {k: v for k, v in os.environ.items() if not _secret.search(k)}',
  "if len(_clean) != len(os.environ) and getattr(sys, 'orig_argv', None):",
  '    os.execve(sys.executable, sys.orig_argv, _clean)',
  'for _k in [k for k in os.environ if _secret.search(k)]:',
  '    del os.environ[_k]',
  ...NO_EXEC,
  "_rf = os.fdopen(os.dup(0), 'r', encoding='utf-8', newline='\\n')",
  "_wf = os.fdopen(os.dup(1), 'w', encoding='utf-8', newline='\\n')",
  '_null = os.open(os.devnull, os.O_RDONLY)',
  'os.dup2(_null, 0)',
  'os.close(_null)',
  'os.dup2(2, 1)',
  '_first = json.loads(_rf.readline())',
  "_dir = tempfile.mkdtemp(prefix='hermes-code-')",
  "with open(os.path.join(_dir, 'hermes_tools.py'), 'w', encoding='utf-8') as _f:",
  "    _f.write(_first['module'])",
  'sys.path.insert(0, _dir)',
  'import hermes_tools',
  'hermes_tools._connect(_rf, _wf)',
  "_globals = {'__name__': '__main__', '__builtins__': __builtins__}",
  'try:',
  "    exec(compile(_first['code'], 'script.py', 'exec'), _globals)",
  'except SystemExit:',
  '    raise',
  'except BaseException:',
  '    _t, _v, _tb = sys.exc_info()',
  '    traceback.print_exception(_t, _v, _tb.tb_next)',
  '    sys.exit(1)',
].join('\n');

/** The sandbox command that runs the bootstrap (python3 from the sandbox's PATH, unbuffered). */
export const BOOTSTRAP_COMMAND = `exec python3 -u -c '${BOOTSTRAP.replace(/'/g, `'\\''`)}'`;

const MODULE_HEAD = `"""Hermes tools for execute_code scripts (generated for this call).

Each function calls the tool of the same name through the worker, as if the model had called it,
and returns its result: a dict (or list) when the tool answered JSON, else the text. A call the
worker refuses (the call limit, a tool not offered here, invalid arguments) raises ToolError.
"""
import json as _json
import threading as _threading

_lock = _threading.Lock()
_io = None
_next = 0


class ToolError(Exception):
    """The worker refused the call."""


def _connect(rf, wf):
    global _io
    _io = (rf, wf)


def _call(tool, args):
    global _next
    with _lock:
        if _io is None:
            raise ToolError('hermes_tools is only usable inside execute_code')
        _next += 1
        rf, wf = _io
        wf.write(_json.dumps({'id': _next, 'tool': tool, 'args': {k: v for k, v in args.items() if v is not None}}) + '\\n')
        wf.flush()
        line = rf.readline()
    if not line:
        raise ToolError('the worker closed the channel')
    reply = _json.loads(line)
    if reply.get('error') is not None:
        raise ToolError(reply['error'])
    result = reply.get('result')
    try:
        return _json.loads(result)
    except (TypeError, ValueError):
        return result
`;

const PY_KEYWORDS = new Set(['False', 'None', 'True', 'and', 'as', 'assert', 'async', 'await', 'break', 'class', 'continue', 'def', 'del', 'elif', 'else', 'except', 'finally', 'for', 'from', 'global', 'if', 'import', 'in', 'is', 'lambda', 'nonlocal', 'not', 'or', 'pass', 'raise', 'return', 'try', 'while', 'with', 'yield', 'json']);
const identifier = (n: string): boolean => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n) && !PY_KEYWORDS.has(n) && !n.startsWith('_');

/** A Python string literal for a docstring (JSON's escapes are Python's for these characters). */
const pyString = (s: string): string => JSON.stringify(s);

/** One function: required parameters first, optional ones `=None`, anything else through **extra. */
function pyFunction(tool: Tool, omit: readonly string[]): string {
  const spec = toolSpec(tool);
  const props = Object.keys((spec.parameters.properties as Record<string, unknown> | undefined) ?? {}).filter((n) => !omit.includes(n) && identifier(n));
  const required = new Set((spec.parameters.required as string[] | undefined) ?? []);
  const params = [...props.filter((p) => required.has(p)), ...props.filter((p) => !required.has(p)).map((p) => `${p}=None`), '**extra'];
  const args = `dict(${[...props.map((p) => `${p}=${p}`), '**extra'].join(', ')})`;
  return [
    `def ${tool.name}(${params.join(', ')}):`,
    `    ${pyString(tool.description)}`,
    `    return _call(${pyString(tool.name)}, ${args})`,
  ].join('\n');
}

/** Arguments a tool does not take from a script (terminal runs in the foreground only). */
export const OMITTED_ARGS: Readonly<Record<string, readonly string[]>> = { terminal: ['background'] };

/** The `hermes_tools` module for these tools. */
export function hermesToolsModule(tools: readonly Tool[]): string {
  const fns = tools.map((t) => pyFunction(t, OMITTED_ARGS[t.name] ?? []));
  return `${MODULE_HEAD}\n\n${fns.join('\n\n\n')}\n\n\n__all__ = ${JSON.stringify(['ToolError', ...tools.map((t) => t.name)])}\n`;
}

