// A fixture of CheckShape: four lines,
// above the limit of three the test gives it,
int f() { return fork(); }
int g() { return ::fork(); }
