/* For pragma_section.c: clang does not let one file name mw_shared in both a data and a
 * bss pragma ("section type conflict"), so bss="mw_shared" gets a file of its own. */
#pragma clang section bss = "mw_shared"
int zeros[1024]; /* bss alone shares the zero-initialized variables */
int with_value = 7; /* ... and not this one (the backend puts it in .data) */
#pragma clang section bss = ""

void store_zeros(int i, int v) { zeros[i] = v; }
