"""What the SASS-reading tests share: a script of scripts/ loaded as a module (they have no .py suffix), and
synthetic cuobjdump text (an instruction line, a kernel of such lines)."""
import importlib.machinery
import importlib.util
import os


def load_script(name):
    path = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", name)
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def line(addr, text):
    return f"        /*{addr:04x}*/                   {text} ;                 /* 0x0000000008067dae */\n"


def kernel(name, lines):
    return f"\t\tFunction : {name}\n" + "".join(line(16 * i, t) for i, t in enumerate(lines))
