"""Layer 1, the language's values: numeric types, tensors and pointers, host-side (DLPack) tensors. Imports only
`base`; behaviour that belongs to an upper layer (host-side evaluation, device printing, reductions) is registered here
by that layer at its import (`values.hooks`)."""
