/* warrantd: placeholder main, replaced by the config and engine work. */
#include <stdio.h>
int main(void) { puts("warrantd"); return 0; }
