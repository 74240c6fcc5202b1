"""Layer 5 (beside `device`), host programs: what a @cute.jit function computes and decides on the host at each
call (host values, guards, actions), kernels and their recorded launches. Imports the layers below; host_values
and host_guards register what values do on the host side (values/hooks.py)."""
