package compact

// FoldDay is foldDay for the tests, which pass a short pause.
var FoldDay = foldDay

// FoldHour is foldHour for the tests, which compare a fold of a quiet
// hour with the empty fold RollupHours records for it.
var FoldHour = foldHour
