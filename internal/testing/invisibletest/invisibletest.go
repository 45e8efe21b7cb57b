// Package invisibletest holds the hidden characters that tests put into
// paths and messages, one of each kind, to check that no text pipeguard
// writes carries one raw.
package invisibletest

// Sample is one hidden character and what it is.
type Sample struct {
	Name string
	Rune rune
}

// Samples returns one character of each kind package invisible escapes,
// the line breaks and blank letters first.
func Samples() []Sample {
	return []Sample{
		{"LINE SEPARATOR", 0x2028},
		{"PARAGRAPH SEPARATOR", 0x2029},
		{"HANGUL FILLER", 0x3164},
		{"HANGUL CHOSEONG FILLER", 0x115f},
		{"HANGUL JUNGSEONG FILLER", 0x1160},
		{"HALFWIDTH HANGUL FILLER", 0xffa0},
		{"BRAILLE PATTERN BLANK", 0x2800},
		{"MONGOLIAN VOWEL SEPARATOR", 0x180e},
		{"MONGOLIAN FREE VARIATION SELECTOR FOUR", 0x180f},
		{"KHMER VOWEL INHERENT AQ", 0x17b4},
		{"COMBINING GRAPHEME JOINER", 0x034f},
		{"KHITAN SMALL SCRIPT FILLER", 0x16fe4},
		{"MUSICAL SYMBOL NULL NOTEHEAD", 0x1d159},
		{"ZERO WIDTH SPACE", 0x200b},
		{"RIGHT-TO-LEFT OVERRIDE", 0x202e},
		{"ZERO WIDTH NO-BREAK SPACE", 0xfeff},
		{"SOFT HYPHEN", 0x00ad},
		{"TAG SPACE", 0xe0020},
		{"VARIATION SELECTOR-17", 0xe0100},
		{"LINE FEED", '\n'},
		{"ESCAPE", 0x1b},
		{"NEXT LINE", 0x85},
	}
}

// All returns every sample's character in one string.
func All() string {
	var s []rune
	for _, c := range Samples() {
		s = append(s, c.Rune)
	}
	return string(s)
}
