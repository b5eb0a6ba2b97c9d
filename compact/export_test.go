package compact

// FoldDay is foldDay for the tests, which pass a short pause.
var FoldDay = foldDay
