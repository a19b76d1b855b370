package emissions

import "strings"

// TableSource cites the built-in factors: Ember's yearly electricity data,
// "emissions intensity" of each country's electricity generation in
// gCO2e/kWh (life-cycle emissions), the latest year Ember published per
// country as of early 2024 — 2023 for the European countries Ember
// reports monthly, 2022 elsewhere; the year is per entry. Ember's data are
// published under CC BY 4.0; the figures were taken from the compilation
// of Ember's country_overview_yearly data in The Green Web Foundation's
// co2.js repository (data/output/average-intensities.json). See
// docs/energy.md.
const TableSource = "Ember, Yearly Electricity Data"

// Entry is one country's average grid emission factor.
type Entry struct {
	Alpha2, Alpha3 string
	Name           string
	GramsPerKWh    float64
	Year           int
}

// Table is the built-in table of average grid emission factors, by ISO
// 3166-1 alpha-2 code (two aggregates: WORLD and EU).
var Table = []Entry{
	// European Union
	{"AT", "AUT", "Austria", 110.81, 2023},
	{"BE", "BEL", "Belgium", 138.11, 2023},
	{"BG", "BGR", "Bulgaria", 335.33, 2023},
	{"HR", "HRV", "Croatia", 204.96, 2023},
	{"CY", "CYP", "Cyprus", 534.32, 2023},
	{"CZ", "CZE", "Czechia", 449.72, 2023},
	{"DK", "DNK", "Denmark", 151.65, 2023},
	{"EE", "EST", "Estonia", 416.67, 2023},
	{"FI", "FIN", "Finland", 79.16, 2023},
	{"FR", "FRA", "France", 56.04, 2023},
	{"DE", "DEU", "Germany", 380.95, 2023},
	{"GR", "GRC", "Greece", 336.57, 2023},
	{"HU", "HUN", "Hungary", 204.19, 2023},
	{"IE", "IRL", "Ireland", 290.81, 2023},
	{"IT", "ITA", "Italy", 330.72, 2023},
	{"LV", "LVA", "Latvia", 123.2, 2023},
	{"LT", "LTU", "Lithuania", 160.07, 2023},
	{"LU", "LUX", "Luxembourg", 105.26, 2023},
	{"MT", "MLT", "Malta", 459.14, 2023},
	{"NL", "NLD", "Netherlands", 267.62, 2023},
	{"PL", "POL", "Poland", 661.93, 2023},
	{"PT", "PRT", "Portugal", 165.55, 2023},
	{"RO", "ROU", "Romania", 240.58, 2023},
	{"SK", "SVK", "Slovakia", 116.77, 2023},
	{"SI", "SVN", "Slovenia", 231.28, 2023},
	{"ES", "ESP", "Spain", 174.05, 2023},
	{"SE", "SWE", "Sweden", 40.7, 2023},
	// Rest of Europe
	{"GB", "GBR", "United Kingdom", 237.59, 2023},
	{"NO", "NOR", "Norway", 30.08, 2023},
	{"CH", "CHE", "Switzerland", 34.84, 2023},
	{"IS", "ISL", "Iceland", 27.68, 2022},
	{"RS", "SRB", "Serbia", 636.06, 2023},
	{"BA", "BIH", "Bosnia and Herzegovina", 600, 2023},
	{"ME", "MNE", "Montenegro", 417.07, 2023},
	{"MK", "MKD", "North Macedonia", 565.35, 2023},
	{"XK", "XKX", "Kosovo", 894.65, 2023},
	{"AL", "ALB", "Albania", 24.29, 2022},
	{"TR", "TUR", "Türkiye", 464.59, 2023},
	{"UA", "UKR", "Ukraine", 259.69, 2022},
	{"BY", "BLR", "Belarus", 441.74, 2022},
	{"MD", "MDA", "Moldova", 648.5, 2022},
	{"RU", "RUS", "Russia", 436.28, 2022},
	{"GE", "GEO", "Georgia", 167.02, 2022},
	{"AM", "ARM", "Armenia", 264.54, 2022},
	// Americas
	{"US", "USA", "United States", 385.98, 2022},
	{"CA", "CAN", "Canada", 161.43, 2022},
	{"MX", "MEX", "Mexico", 475.36, 2022},
	{"BR", "BRA", "Brazil", 105.51, 2022},
	{"AR", "ARG", "Argentina", 394.62, 2022},
	{"CL", "CHL", "Chile", 353.52, 2022},
	{"CO", "COL", "Colombia", 214.88, 2022},
	{"PE", "PER", "Peru", 251.74, 2022},
	{"UY", "URY", "Uruguay", 112.65, 2022},
	{"PY", "PRY", "Paraguay", 24.31, 2022},
	{"BO", "BOL", "Bolivia", 489.14, 2022},
	{"EC", "ECU", "Ecuador", 150.69, 2022},
	{"VE", "VEN", "Venezuela", 185.8, 2022},
	{"CR", "CRI", "Costa Rica", 26.46, 2022},
	{"PA", "PAN", "Panama", 161.68, 2022},
	{"GT", "GTM", "Guatemala", 328.27, 2022},
	{"CU", "CUB", "Cuba", 637.61, 2022},
	{"DO", "DOM", "Dominican Republic", 580.78, 2022},
	{"PR", "PRI", "Puerto Rico", 678.74, 2022},
	// Asia and Oceania
	{"CN", "CHN", "China", 585.82, 2022},
	{"IN", "IND", "India", 705.13, 2022},
	{"JP", "JPN", "Japan", 512.81, 2022},
	{"KR", "KOR", "South Korea", 441.65, 2022},
	{"TW", "TWN", "Taiwan", 639.53, 2022},
	{"HK", "HKG", "Hong Kong", 699.5, 2022},
	{"SG", "SGP", "Singapore", 474, 2022},
	{"MY", "MYS", "Malaysia", 605.83, 2022},
	{"TH", "THA", "Thailand", 560.74, 2022},
	{"VN", "VNM", "Viet Nam", 409.8, 2022},
	{"ID", "IDN", "Indonesia", 675.93, 2022},
	{"PH", "PHL", "Philippines", 601.1, 2022},
	{"PK", "PAK", "Pakistan", 463.66, 2022},
	{"BD", "BGD", "Bangladesh", 678.11, 2022},
	{"LK", "LKA", "Sri Lanka", 509.78, 2022},
	{"NP", "NPL", "Nepal", 24.44, 2022},
	{"KZ", "KAZ", "Kazakhstan", 830.41, 2022},
	{"UZ", "UZB", "Uzbekistan", 1167.6, 2022},
	{"MN", "MNG", "Mongolia", 771.8, 2022},
	{"AU", "AUS", "Australia", 570.35, 2022},
	{"NZ", "NZL", "New Zealand", 110.89, 2022},
	// Middle East and Africa
	{"IL", "ISR", "Israel", 582.93, 2022},
	{"SA", "SAU", "Saudi Arabia", 706.79, 2022},
	{"AE", "ARE", "United Arab Emirates", 561.14, 2022},
	{"QA", "QAT", "Qatar", 602.59, 2022},
	{"KW", "KWT", "Kuwait", 649.2, 2022},
	{"OM", "OMN", "Oman", 564.69, 2022},
	{"JO", "JOR", "Jordan", 540.92, 2022},
	{"IR", "IRN", "Iran", 665.15, 2022},
	{"IQ", "IRQ", "Iraq", 688.81, 2022},
	{"EG", "EGY", "Egypt", 570.13, 2022},
	{"MA", "MAR", "Morocco", 662.64, 2022},
	{"TN", "TUN", "Tunisia", 564.62, 2022},
	{"DZ", "DZA", "Algeria", 634.61, 2022},
	{"ZA", "ZAF", "South Africa", 729.67, 2022},
	{"NG", "NGA", "Nigeria", 516.23, 2022},
	{"KE", "KEN", "Kenya", 83.33, 2022},
	{"ET", "ETH", "Ethiopia", 24.64, 2022},
	{"GH", "GHA", "Ghana", 484, 2022},
	{"TZ", "TZA", "Tanzania", 339.25, 2022},
	{"UG", "UGA", "Uganda", 44.53, 2022},
	// Aggregates
	{"EU", "", "European Union", 243.83, 2023},
	{"WORLD", "", "World", 485.99, 2022},
}

// Lookup finds a zone's entry: an ISO 3166-1 alpha-2 or alpha-3 code, EU or
// WORLD, any case. A live provider's sub-national zone ("US-CAL-CISO",
// "DK-DK1") falls back to its country, the part before the first '-'.
func Lookup(zone string) (Entry, bool) {
	z := strings.ToUpper(strings.TrimSpace(zone))
	if country, _, ok := strings.Cut(z, "-"); ok {
		z = country
	}
	if z == "" {
		return Entry{}, false
	}
	for _, e := range Table {
		if e.Alpha2 == z || (e.Alpha3 != "" && e.Alpha3 == z) {
			return e, true
		}
	}
	return Entry{}, false
}
