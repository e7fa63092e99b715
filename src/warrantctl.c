/* warrantctl: placeholder main. */
#include <stdio.h>
int main(void) { puts("warrantctl"); return 0; }
