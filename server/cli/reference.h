/*
 * reference.h - `governor reference` (prefix cli_): the answer's reason codes, constraint
 * codes, vertex fields and evaluated figures, as the markdown tables of docs/api.md's "Request
 * and answer reference". The rows come from the core's tables, so the page's copy (checked by
 * tests/readme/reference.py) cannot drift from the codes the server sends.
 *
 * May call: core (its enums, names and field tables), libc.
 */
#ifndef GOVERNOR_CLI_REFERENCE_H
#define GOVERNOR_CLI_REFERENCE_H

#include <stdio.h>

/* Prints the tables to out. 1 (after printing the rest) when a row of the core's tables has
 * no words here, naming it on stderr; else 0. */
int cli_print_reference(FILE *out);

#endif
