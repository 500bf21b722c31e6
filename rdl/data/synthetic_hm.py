"""A synthetic H&M database in the Kaggle format, with the signal real shoppers leave.

:func:`generate` returns the three Kaggle frames (``customers``, ``articles``,
``transactions``) with every column of the data contract (``hm-schema.md`` of the project's shared material),
Kaggle-like ids and value sets, and a generative story that gives the three RelBench tasks
(user-churn, item-sales, user-item-purchase) a learnable signal that lives mostly in the
*transactions*, not in the entity rows:

Articles
    Products (a product code) come in one to a dozen colour variants (articles). A product
    belongs to a section (which fixes its index and index group) and has a product type (which
    fixes its product group, garment group, season and price level). Each article has a
    hidden launch day, a popularity life cycle (rise over days, peak, exponential decay; a
    few evergreen basics barely decay), a season (summer or winter items swing over the year)
    and a heavy-tailed base popularity. None of this is a column: the article row cannot tell
    where the article is in its life, its recent sales can.

Customers
    A hidden persona (gender, age band, parent) gives a taste: three favourite sections,
    drawn from index groups that fit the persona. A heavy-tailed activity level, a join day,
    a ramp-up, a decay and a stop day (churn) set the customer's weekly visit rate; recent
    visits raise it for a while (bursts). The visible columns are only weakly tied to this:
    FN / Active / fashion news lean towards active customers, PRE-CREATE towards weak ones,
    LEFT CLUB towards customers who stopped, age towards the taste.

Transactions
    Week by week (a loop of about 55 steps, vectorised over customers) each customer makes a
    Poisson number of visits (days); a visit is a basket of one to many rows. A row is a
    repeat of an article the customer bought before (or a colour sibling of it) if it is
    still sold, else a taste-driven pick: a section (mostly a favourite), then an article of
    the section in proportion to its popularity that week (cumulative weights + searchsorted;
    never a customers x articles matrix). A few rows are copies of the previous row: several
    units of one item, identical rows as in Kaggle. The price is the article's price level,
    marked down as it ages and in sale periods, quantised; the channel (1 store, 2 online)
    follows the customer's habit.

Everything is drawn from ``numpy.random.Generator(seed)``: the same seed and scale give
identical frames. ``scale=1.0`` is the size of RelBench's trimmed rel-hm (about 1.37M
customers, 105k articles, 15.2M transactions from 2019-09-07 to 2020-09-22); rows scale
linearly with ``scale``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

#: Bump when the generated data changes: it names the cache folders of ``rdl.data.hm``.
GENERATOR_VERSION = 1

FULL_CUSTOMERS = 1_371_980
FULL_ARTICLES = 105_542
FULL_TRANSACTIONS = 15_190_000   # RelBench's rel-hm: 2019-09-07 .. 2020-09-22
FULL_DAYS = 382
ARTICLES_PER_PRODUCT = 105_542 / 47_224

#: The unit of ``t_dat`` in every frame and database made here.
TIME_DTYPE = "datetime64[ns]"

CUSTOMER_COLUMNS = ["customer_id", "FN", "Active", "club_member_status",
                    "fashion_news_frequency", "age", "postal_code"]
ARTICLE_COLUMNS = [
    "article_id", "product_code", "prod_name", "product_type_no", "product_type_name",
    "product_group_name", "graphical_appearance_no", "graphical_appearance_name",
    "colour_group_code", "colour_group_name", "perceived_colour_value_id",
    "perceived_colour_value_name", "perceived_colour_master_id", "perceived_colour_master_name",
    "department_no", "department_name", "index_code", "index_name", "index_group_no",
    "index_group_name", "section_no", "section_name", "garment_group_no", "garment_group_name",
    "detail_desc"]
TRANSACTION_COLUMNS = ["t_dat", "customer_id", "article_id", "price", "sales_channel_id"]

# -- vocabularies (code/name pairs are 1:1; shares are relative) --------------------------
INDEX_GROUPS = {1: "Ladieswear", 2: "Divided", 3: "Menswear", 4: "Baby/Children", 26: "Sport"}
INDEXES = {  # code: (name, index group)
    "A": ("Ladieswear", 1), "B": ("Lingeries/Tights", 1), "C": ("Ladies Accessories", 1),
    "D": ("Divided", 2), "F": ("Menswear", 3), "G": ("Baby Sizes 50-98", 4),
    "H": ("Children Sizes 92-140", 4), "I": ("Children Sizes 134-170", 4),
    "J": ("Children Accessories, Swimwear", 4), "S": ("Sport", 26)}

_GARMENTS = "Garment Upper body|Garment Lower body|Garment Full body"
SECTIONS = [  # (no, name, index code, product groups sold, share, evergreen share)
    (16, "Womens Everyday Basics", "A", _GARMENTS, 6, 0.35),
    (15, "Womens Everyday Collection", "A", _GARMENTS, 7, 0.05),
    (66, "Womens Casual", "A", _GARMENTS, 4, 0.05),
    (11, "Womens Tailoring", "A", _GARMENTS, 5, 0.05),
    (57, "Ladies Denim", "A", "Garment Lower body|Garment Upper body", 2, 0.2),
    (8, "Mama", "A", _GARMENTS + "|Underwear", 1, 0.1),
    (50, "H&M+", "A", _GARMENTS, 1, 0.1),
    (18, "Womens Trend", "A", _GARMENTS, 4, 0.0),
    (19, "Womens Premium", "A", _GARMENTS, 1, 0.0),
    (61, "Womens Lingerie", "B", "Underwear|Swimwear", 5, 0.25),
    (62, "Womens Nightwear, Socks & Tigh", "B", "Nightwear|Socks & Tights|Underwear/nightwear", 3, 0.3),
    (60, "Womens Swimwear, beachwear", "B", "Swimwear", 2, 0.0),
    (6, "Womens Small accessories", "C", "Accessories|Items|Cosmetic", 4, 0.1),
    (64, "Womens Shoes", "C", "Shoes", 2, 0.05),
    (65, "Womens Big accessories", "C", "Accessories|Bags", 2, 0.05),
    (99, "Concepts & Home", "C", "Furniture|Interior textile|Stationery|Fun|Garment and Shoe care|Unknown", 0.4, 0.0),
    (53, "Divided Collection", "D", _GARMENTS, 5, 0.05),
    (52, "Divided Projects", "D", _GARMENTS, 2, 0.0),
    (51, "Divided Basics", "D", "Garment Upper body|Garment Lower body", 2, 0.4),
    (82, "Divided Accessories", "D", "Accessories|Bags|Shoes", 2, 0.05),
    (80, "Divided Selected", "D", _GARMENTS, 1, 0.0),
    (56, "Divided Complements Other", "D", "Underwear|Swimwear|Socks & Tights", 1, 0.2),
    (21, "Contemporary Casual", "F", "Garment Upper body|Garment Lower body", 2, 0.1),
    (23, "Contemporary Street", "F", "Garment Upper body|Garment Lower body", 1.5, 0.05),
    (70, "Contemporary Smart", "F", "Garment Upper body|Garment Lower body", 1.5, 0.1),
    (26, "Men Underwear", "F", "Underwear|Socks & Tights|Nightwear", 1.5, 0.4),
    (25, "Men Suits & Tailoring", "F", "Garment Upper body|Garment Lower body", 0.8, 0.1),
    (29, "Men Accessories", "F", "Accessories|Bags", 1, 0.05),
    (31, "Men Shoes", "F", "Shoes", 0.6, 0.05),
    (20, "Men Project", "F", "Garment Upper body|Garment Lower body", 0.8, 0.0),
    (44, "Baby Essentials & Complements", "G", _GARMENTS + "|Socks & Tights|Nightwear", 3, 0.3),
    (77, "Baby Boy", "G", _GARMENTS, 2, 0.05),
    (79, "Baby Girl", "G", _GARMENTS, 2, 0.05),
    (46, "Kids Girl", "H", _GARMENTS, 3, 0.05),
    (45, "Kids Boy", "H", "Garment Upper body|Garment Lower body", 2.5, 0.05),
    (76, "Kids Outerwear", "H", "Garment Upper body", 1, 0.0),
    (47, "Kids & Baby Shoes", "H", "Shoes", 0.8, 0.05),
    (41, "Young Girl", "I", _GARMENTS, 2.5, 0.05),
    (72, "Young Boy", "I", "Garment Upper body|Garment Lower body", 2, 0.05),
    (27, "Girls Underwear & Basics", "I", "Underwear|Socks & Tights|Nightwear", 1.5, 0.3),
    (43, "Kids Accessories, Swimwear & D", "J", "Accessories|Swimwear|Socks & Tights", 2, 0.05),
    (5, "Ladies H&M Sport", "S", "Garment Upper body|Garment Lower body|Swimwear|Socks & Tights", 1.5, 0.1),
    (42, "Men H&M Sport", "S", "Garment Upper body|Garment Lower body", 0.6, 0.1),
    (40, "Kids Sports", "S", "Garment Upper body|Garment Lower body", 0.5, 0.05),
]

GARMENT_GROUPS = {
    1001: "Unknown", 1002: "Jersey Basic", 1003: "Knitwear", 1005: "Jersey Fancy",
    1006: "Woven/Jersey/Knitted mix Baby", 1007: "Outdoor", 1008: "Dressed", 1009: "Trousers",
    1010: "Blouses", 1011: "Shirts", 1012: "Skirts", 1013: "Dresses Ladies", 1014: "Trousers Denim",
    1016: "Dresses/Skirts girls", 1017: "Under-, Nightwear", 1018: "Swimwear",
    1019: "Accessories", 1020: "Shoes", 1021: "Socks and Tights", 1023: "Special Offers",
    1025: "Shorts"}

# (no, name, product group, garment group, season 0/1 summer/2 winter, price level, share)
PRODUCT_TYPES = [
    (255, "T-shirt", "Garment Upper body", 1002, 1, 0.017, 10),
    (253, "Vest top", "Garment Upper body", 1002, 1, 0.013, 6),
    (254, "Top", "Garment Upper body", 1005, 0, 0.022, 6),
    (252, "Sweater", "Garment Upper body", 1003, 2, 0.034, 9),
    (258, "Blouse", "Garment Upper body", 1010, 0, 0.030, 5),
    (259, "Shirt", "Garment Upper body", 1011, 0, 0.030, 4),
    (267, "Cardigan", "Garment Upper body", 1003, 2, 0.034, 3),
    (260, "Jacket", "Garment Upper body", 1007, 0, 0.050, 4),
    (264, "Coat", "Garment Upper body", 1007, 2, 0.080, 1.5),
    (263, "Hoodie", "Garment Upper body", 1005, 2, 0.030, 3),
    (275, "Blazer", "Garment Upper body", 1008, 0, 0.050, 1.5),
    (296, "Bodysuit", "Garment Upper body", 1002, 0, 0.017, 2),
    (257, "Polo shirt", "Garment Upper body", 1002, 1, 0.022, 0.7),
    (261, "Tank top", "Garment Upper body", 1002, 1, 0.013, 0.8),
    (272, "Trousers", "Garment Lower body", 1009, 0, 0.034, 10),
    (274, "Shorts", "Garment Lower body", 1025, 1, 0.022, 3),
    (273, "Leggings/Tights", "Garment Lower body", 1002, 0, 0.017, 2.5),
    (266, "Skirt", "Garment Lower body", 1012, 1, 0.028, 3),
    (271, "Jeans", "Garment Lower body", 1014, 0, 0.040, 4),
    (277, "Joggers", "Garment Lower body", 1005, 2, 0.028, 1),
    (265, "Dress", "Garment Full body", 1013, 1, 0.034, 10),
    (276, "Jumpsuit/Playsuit", "Garment Full body", 1013, 1, 0.034, 1.5),
    (269, "Dungarees", "Garment Full body", 1009, 0, 0.030, 0.5),
    (270, "Outdoor overall", "Garment Full body", 1007, 2, 0.050, 0.3),
    (268, "Garment Set", "Garment Full body", 1005, 0, 0.030, 1),
    (306, "Bra", "Underwear", 1017, 0, 0.022, 5),
    (286, "Underwear bottom", "Underwear", 1017, 0, 0.008, 5),
    (305, "Underwear body", "Underwear", 1017, 0, 0.020, 0.5),
    (285, "Boxers", "Underwear", 1017, 0, 0.015, 1),
    (283, "Pyjama set", "Nightwear", 1017, 2, 0.028, 2),
    (287, "Night gown", "Nightwear", 1017, 1, 0.022, 0.6),
    (284, "Pyjama bottom", "Nightwear", 1017, 0, 0.017, 0.5),
    (302, "Socks", "Socks & Tights", 1021, 0, 0.007, 2.5),
    (304, "Underwear Tights", "Socks & Tights", 1021, 2, 0.010, 1.5),
    (300, "Leg warmers", "Socks & Tights", 1021, 2, 0.012, 0.2),
    (288, "Robe", "Underwear/nightwear", 1017, 2, 0.034, 0.3),
    (59, "Swimwear bottom", "Swimwear", 1018, 1, 0.013, 2.5),
    (60, "Bikini top", "Swimwear", 1018, 1, 0.017, 2.5),
    (61, "Swimsuit", "Swimwear", 1018, 1, 0.028, 1),
    (62, "Swimwear set", "Swimwear", 1018, 1, 0.025, 0.5),
    (63, "Sarong", "Swimwear", 1018, 1, 0.017, 0.2),
    (66, "Earring", "Accessories", 1019, 0, 0.010, 3),
    (72, "Necklace", "Accessories", 1019, 0, 0.012, 1.5),
    (68, "Hat/beanie", "Accessories", 1019, 2, 0.014, 1.5),
    (70, "Scarf", "Accessories", 1019, 2, 0.020, 1),
    (71, "Gloves", "Accessories", 1019, 2, 0.012, 0.5),
    (69, "Sunglasses", "Accessories", 1019, 1, 0.012, 0.8),
    (73, "Hair clip", "Accessories", 1019, 0, 0.007, 1),
    (74, "Belt", "Accessories", 1019, 0, 0.014, 0.8),
    (75, "Hair/alice band", "Accessories", 1019, 0, 0.007, 0.8),
    (76, "Cap/peaked", "Accessories", 1019, 1, 0.012, 0.6),
    (77, "Watch", "Accessories", 1019, 0, 0.030, 0.2),
    (78, "Bracelet", "Accessories", 1019, 0, 0.010, 0.4),
    (79, "Ring", "Accessories", 1019, 0, 0.008, 0.3),
    (87, "Boots", "Shoes", 1020, 2, 0.060, 1.5),
    (89, "Sneakers", "Shoes", 1020, 0, 0.040, 1.5),
    (88, "Sandals", "Shoes", 1020, 1, 0.030, 1),
    (90, "Ballerinas", "Shoes", 1020, 0, 0.025, 0.4),
    (91, "Pumps", "Shoes", 1020, 0, 0.040, 0.4),
    (92, "Slippers", "Shoes", 1020, 2, 0.017, 0.3),
    (93, "Flip flop", "Shoes", 1020, 1, 0.010, 0.3),
    (67, "Bag", "Bags", 1019, 0, 0.030, 2),
    (80, "Backpack", "Bags", 1019, 0, 0.035, 0.5),
    (81, "Tote bag", "Bags", 1019, 1, 0.020, 0.5),
    (82, "Wallet", "Bags", 1019, 0, 0.017, 0.3),
    (94, "Nail polish", "Cosmetic", 1019, 0, 0.006, 0.5),
    (95, "Lipstick", "Cosmetic", 1019, 0, 0.008, 0.3),
    (97, "Umbrella", "Items", 1019, 0, 0.014, 0.3),
    (98, "Keychain", "Items", 1019, 0, 0.006, 0.2),
    (100, "Side table", "Furniture", 1001, 0, 0.060, 0.2),
    (101, "Cushion", "Interior textile", 1001, 0, 0.017, 0.3),
    (103, "Marker pen", "Stationery", 1001, 0, 0.005, 0.2),
    (104, "Clothing mist", "Garment and Shoe care", 1001, 0, 0.010, 0.2),
    (105, "Toy", "Fun", 1001, 0, 0.010, 0.2),
    (-1, "Unknown", "Unknown", 1001, 0, 0.020, 0.3),
]

PERCEIVED_VALUES = {-1: "Unknown", 1: "Bright", 2: "Light", 3: "Dusty Light", 4: "Dark",
                    5: "Medium Dusty", 6: "Undefined", 7: "Medium"}
PERCEIVED_MASTERS = {
    -1: "Unknown", 1: "Yellowish Brown", 2: "Blue", 3: "Green", 4: "Pink", 5: "Black", 6: "Mole",
    7: "Turquoise", 8: "Orange", 9: "White", 10: "Metal", 11: "Beige", 12: "Grey",
    13: "Khaki green", 14: "Bluish Green", 15: "Brown", 16: "Yellowish Green", 18: "Red",
    19: "Yellow", 20: "Lilac Purple"}
COLOURS = [  # (code, name, perceived value, perceived master, share)
    (9, "Black", 4, 5, 20), (10, "White", 2, 9, 9), (11, "Off White", 2, 9, 3),
    (12, "Light Beige", 2, 11, 3), (13, "Beige", 3, 11, 2.5), (14, "Dark Beige", 5, 11, 1),
    (6, "Light Grey", 2, 12, 1.5), (7, "Grey", 5, 12, 2.5), (8, "Dark Grey", 4, 12, 2),
    (71, "Light Blue", 2, 2, 3.5), (72, "Blue", 7, 2, 4), (73, "Dark Blue", 4, 2, 10),
    (51, "Light Pink", 2, 4, 4), (52, "Pink", 7, 4, 2.5), (53, "Dark Pink", 4, 4, 0.8),
    (50, "Other Pink", 1, 4, 0.3), (41, "Light Red", 2, 18, 0.3), (42, "Red", 1, 18, 2.5),
    (43, "Dark Red", 4, 18, 1.3), (21, "Light Yellow", 2, 19, 0.4), (22, "Yellow", 1, 19, 1.2),
    (23, "Dark Yellow", 4, 19, 0.8), (31, "Light Orange", 2, 8, 0.6), (32, "Orange", 1, 8, 0.8),
    (33, "Dark Orange", 4, 8, 0.6), (61, "Light Purple", 2, 20, 0.6), (62, "Purple", 7, 20, 0.3),
    (63, "Dark Purple", 4, 20, 0.4), (81, "Light Green", 2, 3, 0.8), (82, "Green", 7, 3, 1.0),
    (83, "Dark Green", 4, 3, 1.7), (19, "Greenish Khaki", 5, 13, 1.2),
    (17, "Yellowish Brown", 5, 1, 0.5), (15, "Brown", 4, 15, 0.7), (16, "Mole", 5, 6, 0.5),
    (3, "Gold", 1, 10, 0.6), (4, "Silver", 6, 10, 0.5), (90, "Light Turquoise", 2, 7, 0.3),
    (91, "Turquoise", 7, 7, 0.4), (92, "Dark Turquoise", 4, 7, 0.3),
    (93, "Bluish Green", 5, 14, 0.2), (94, "Yellowish Green", 1, 16, 0.2),
    (-1, "Unknown", -1, -1, 0.1)]
APPEARANCES = [  # (no, name, share)
    (1010016, "Solid", 50), (1010001, "All over pattern", 10), (1010010, "Melange", 3),
    (1010017, "Stripe", 5), (1010023, "Denim", 3), (1010014, "Placement print", 5),
    (1010021, "Lace", 2), (1010026, "Other pattern", 1.5), (1010004, "Check", 1.5),
    (1010008, "Front print", 1.5), (1010005, "Colour blocking", 1), (1010024, "Glittering/Metallic", 1),
    (1010020, "Contrast", 0.5), (1010022, "Jacquard", 0.5), (1010007, "Embroidery", 0.5),
    (1010019, "Sequin", 0.3), (1010011, "Metallic", 0.3), (1010018, "Treatment", 0.3),
    (1010012, "Mixed solid/pattern", 0.3), (1010013, "Other structure", 0.3), (1010015, "Slub", 0.2),
    (1010027, "Mesh", 0.2), (1010006, "Dot", 0.5), (1010002, "Application/3D", 0.3),
    (1010003, "Argyle", 0.05), (1010009, "Hologram", 0.05), (1010025, "Transparent", 0.1),
    (1010028, "Neps", 0.05), (1010029, "Chambray", 0.05), (-1, "Unknown", 0.1)]

_NAME_HEADS = np.array("Ti Ja Lu Ma Bo Sa Ki El Ro Fe No Vi Ha Li Mi Da Su Te Pa Ca Ne Jo Ai Fa".split())
_NAME_TAILS = np.array("lly de na ya nnie ra ssi sa ven lla ck nja ndy ro xie ki lde tte ris mba".split())
_NAME_STYLES = np.array(["", "", "", " HW", " (1)", " Slim", " Wide", " Skinny", " Oversized",
                         " Soft", " Basic", " 2-pack", " Rib", " Linen"])
_DESC_ADJ = np.array(["Fitted", "Relaxed-fit", "Short", "Long", "Oversized", "Soft", "Sleeveless",
                      "Cropped", "Loose-fitting", "Straight-cut", "Fine-knit", "Wide"])
_DESC_MATERIAL = np.array(["soft cotton jersey", "sweatshirt fabric", "woven fabric", "a fine knit",
                           "stretch denim", "airy chiffon", "ribbed jersey", "lyocell-blend fabric",
                           "recycled polyester", "linen-blend fabric", "organic cotton"])
_DESC_FEATURE = np.array(["", " with a round neckline and long sleeves", " with an elasticated waist",
                          " with buttons down the front", " with a zip at the back",
                          " with narrow shoulder straps", " with side pockets",
                          ", a V-neck and short sleeves", " with a concealed zip",
                          " with a drawstring and ribbed cuffs"])

# Personas: affinity of an index group (1, 2, 3, 4, 26) to a customer's taste.
_AFFINITY_FEMALE = {"young": [0.8, 2.5, 0.2, 0.1, 0.4], "adult": [1.6, 0.6, 0.3, 0.2, 0.4],
                    "middle": [1.8, 0.25, 0.3, 0.2, 0.3], "senior": [1.5, 0.1, 0.3, 0.2, 0.1]}
_AFFINITY_MALE = {"young": [0.1, 0.6, 2.5, 0.1, 0.6], "adult": [0.2, 0.2, 2.5, 0.2, 0.5],
                  "middle": [0.3, 0.1, 2.5, 0.2, 0.3], "senior": [0.3, 0.05, 2.5, 0.2, 0.1]}
_AGE_BANDS = [("young", 0, 26), ("adult", 26, 40), ("middle", 40, 56), ("senior", 56, 200)]
_PARENT_BOOST = 3.0                    # parents' affinity to Baby/Children, multiplied
_FAVOURITE_CUTS = (0.45, 0.75, 0.90)   # favourite 1, 2, 3, else explore
ACTIVITY_SIGMA = 0.65                  # log-sd of the customers' activity level
BURST = 0.5                            # how much recent visits raise the visit rate
P_COPY = 0.04                          # a basket row is a copy of the previous one
PRICE_FACTOR = 1.5                     # price levels of PRODUCT_TYPES are multiplied by it
RATE_FUDGE = 1.37                      # bursts + first visits: expected rows / base rate


def generate(seed: int = 0, scale: float = 0.02, start="2019-09-07",
             end="2020-09-22") -> dict[str, pd.DataFrame]:
    """Synthetic Kaggle frames ``{"customers", "articles", "transactions"}`` (see module doc).

    Args:
        seed: seed of ``numpy.random.Generator``; same seed and scale -> identical frames.
        scale: 1.0 is RelBench's rel-hm size; rows scale linearly.
        start, end: first and last transaction day (inclusive).
    """
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    start, end = pd.Timestamp(start).normalize(), pd.Timestamp(end).normalize()
    n_days = (end - start).days + 1
    if n_days < 7:
        raise ValueError(f"need at least 7 days between start {start.date()} and end {end.date()}")
    rng = np.random.default_rng(seed)
    n_cust = max(20, round(FULL_CUSTOMERS * scale))
    n_art = max(10, round(FULL_ARTICLES * scale))
    n_tx = FULL_TRANSACTIONS * scale * n_days / FULL_DAYS

    art = _articles(rng, n_art, start, n_days)
    cust = _customers(rng, n_cust, n_days)
    day_w = _day_weights(start, n_days)
    tx = _transactions(rng, cust, art, day_w, n_tx)
    cust_df = _customer_frame(rng, cust, n_days)
    return {"customers": cust_df, "articles": art["frame"],
            "transactions": _transaction_frame(tx, cust_df["customer_id"], art["frame"], start)}


# -- articles -------------------------------------------------------------------------------
def _table(rows, *names):
    return {n: np.array([r[i] for r in rows]) for i, n in enumerate(names)}


def _articles(rng, n_art: int, start: pd.Timestamp, n_days: int) -> dict:
    """Article rows plus their hidden life cycle (launch, rise, decay, season, popularity)."""
    sec = _table(SECTIONS, "no", "name", "index", "groups", "share", "evergreen")
    typ = _table(PRODUCT_TYPES, "no", "name", "group", "garment", "season", "price", "share")
    n_prod = max(1, min(n_art, round(n_art / ARTICLES_PER_PRODUCT)))

    # products: section, then a product type among the groups the section sells
    p_sec = rng.choice(len(SECTIONS), n_prod, p=_norm(sec["share"].astype(float)))
    p_type = np.empty(n_prod, dtype=np.int64)
    for s in range(len(SECTIONS)):
        idx = np.flatnonzero(p_sec == s)
        ok = np.isin(typ["group"], sec["groups"][s].split("|"))
        p_type[idx] = rng.choice(np.flatnonzero(ok), idx.size, p=_norm(typ["share"][ok]))
    index_code = sec["index"][p_sec]
    index_group = np.array([INDEXES[c][1] for c in index_code])
    garment = typ["garment"][p_type].copy()
    is_garment = np.char.startswith(typ["group"][p_type].astype(str), "Garment")
    garment[is_garment & (index_code == "G")] = 1006
    garment[(garment == 1002) & (rng.random(n_prod) < 0.4)] = 1005
    garment[is_garment & (rng.random(n_prod) < 0.03)] = 1023
    dep_key = sec["no"][p_sec] * 10_000 + garment
    dep_keys, dep_idx = np.unique(dep_key, return_inverse=True)
    dep_no = np.sort(rng.choice(np.arange(1000, 10000), dep_keys.size, replace=False))[dep_idx]
    sec_word = np.array([n.split()[0].replace("&", "").strip() or n for n in sec["name"]])
    dep_name = _cat(np.array([GARMENT_GROUPS[g] for g in garment]), " ", sec_word[p_sec])

    # names and descriptions, shared by the variants of a product
    type_name = typ["name"][p_type]
    prod_name = _cat(_NAME_HEADS[rng.integers(0, _NAME_HEADS.size, n_prod)],
                     _NAME_TAILS[rng.integers(0, _NAME_TAILS.size, n_prod)],
                     _NAME_STYLES[rng.integers(0, _NAME_STYLES.size, n_prod)], " ", type_name)
    desc = _cat(_DESC_ADJ[rng.integers(0, _DESC_ADJ.size, n_prod)], " ",
                np.char.lower(type_name.astype(str)), " in ",
                _DESC_MATERIAL[rng.integers(0, _DESC_MATERIAL.size, n_prod)],
                _DESC_FEATURE[rng.integers(0, _DESC_FEATURE.size, n_prod)], ".")
    desc = desc.astype(object)
    desc[_some(rng, n_prod, 0.004)] = np.nan

    # variants: every product has >= 1, the rest go to popular products
    extra = rng.multinomial(n_art - n_prod, _norm(rng.lognormal(0, 0.8, n_prod))) if n_art > n_prod \
        else np.zeros(n_prod, dtype=np.int64)
    n_var = 1 + extra
    prod = np.repeat(np.arange(n_prod), n_var)
    var_rank = np.arange(n_art) - np.repeat(np.cumsum(n_var) - n_var, n_var)
    product_code = np.sort(rng.choice(np.arange(108_000, 960_000), n_prod, replace=False))
    suffix = rng.integers(1, 25, n_prod)[prod] + var_rank * rng.integers(1, 4, n_prod)[prod]
    article_id = product_code[prod].astype(np.int64) * 1000 + suffix

    col = _table(COLOURS, "code", "name", "value", "master", "share")
    app = _table(APPEARANCES, "no", "name", "share")
    a_col = rng.choice(len(COLOURS), n_art, p=_norm(col["share"]))
    a_app = rng.choice(len(APPEARANCES), n_art, p=_norm(app["share"]))
    t, s = p_type[prod], p_sec[prod]
    frame = pd.DataFrame({
        "article_id": article_id,
        "product_code": product_code[prod].astype(np.int64),
        "prod_name": _str(prod_name[prod]),
        "product_type_no": typ["no"][t].astype(np.int64),
        "product_type_name": _str(typ["name"][t]),
        "product_group_name": _str(typ["group"][t]),
        "graphical_appearance_no": app["no"][a_app].astype(np.int64),
        "graphical_appearance_name": _str(app["name"][a_app]),
        "colour_group_code": col["code"][a_col].astype(np.int64),
        "colour_group_name": _str(col["name"][a_col]),
        "perceived_colour_value_id": col["value"][a_col].astype(np.int64),
        "perceived_colour_value_name": _str(np.array([PERCEIVED_VALUES[v] for v in col["value"]])[a_col]),
        "perceived_colour_master_id": col["master"][a_col].astype(np.int64),
        "perceived_colour_master_name": _str(np.array([PERCEIVED_MASTERS[m] for m in col["master"]])[a_col]),
        "department_no": dep_no[prod].astype(np.int64),
        "department_name": _str(dep_name[prod]),
        "index_code": _str(index_code[prod]),
        "index_name": _str(np.array([INDEXES[c][0] for c in index_code])[prod]),
        "index_group_no": index_group[prod].astype(np.int64),
        "index_group_name": _str(np.array([INDEX_GROUPS[g] for g in index_group])[prod]),
        "section_no": sec["no"][s].astype(np.int64),
        "section_name": _str(sec["name"][s]),
        "garment_group_no": garment[prod].astype(np.int64),
        "garment_group_name": _str(np.array([GARMENT_GROUPS[g] for g in garment])[prod]),
        "detail_desc": pd.array(desc[prod], dtype="str"),
    })

    # hidden life cycle: launch (days from start), rise, half-life, season, popularity
    launch = rng.uniform(-450, n_days - 3, n_prod)[prod] + np.where(
        rng.random(n_art) < 0.3, rng.uniform(0, 120, n_art), 0.0)
    evergreen = rng.random(n_art) < sec["evergreen"][s]
    half_life = np.where(evergreen, 2000.0, rng.lognormal(np.log(40), 0.6, n_art))
    rise = rng.uniform(3, 21, n_art)
    season = typ["season"][t]
    peak_doy = np.select([season == 1, season == 2], [175.0, 350.0], 0.0)
    amp = np.where(season > 0, rng.uniform(0.5, 1.1, n_art), 0.0)
    pop = rng.lognormal(0, 1.0, n_prod)[prod] * rng.lognormal(0, 0.7, n_art)
    level = PRICE_FACTOR * typ["price"][t] * np.select([index_group == 4, index_group == 26], [0.6, 1.1], 1.0)[prod]
    level *= np.where(sec["no"][s] == 19, 2.0, 1.0) * rng.lognormal(0, 0.25, n_art)
    markdown1 = launch + rise + rng.lognormal(np.log(60), 0.4, n_art)
    return {"frame": frame, "section": s, "product": prod, "launch": launch, "rise": rise,
            "half_life": half_life, "peak_doy": peak_doy, "amp": amp, "pop": pop,
            "price": level, "markdown1": markdown1,
            "markdown2": markdown1 + rng.lognormal(np.log(50), 0.4, n_art),
            "start_doy": start.dayofyear}


def _article_weights(art: dict, t: float) -> np.ndarray:
    """Popularity of every article on day ``t`` (days from start): life cycle x season."""
    age = t - art["launch"]
    life = np.where(age < art["rise"], np.clip(age / art["rise"], 0, None),
                    np.exp2(-(age - art["rise"]) / art["half_life"]))
    life[age < 0] = 0.0
    doy = art["start_doy"] + t
    season = np.exp(art["amp"] * (np.cos(2 * np.pi * (doy - art["peak_doy"]) / 365.25) - 1))
    return art["pop"] * life * season, life


def _article_prices(art: dict, a: np.ndarray, day: np.ndarray, sale: np.ndarray,
                    channel: np.ndarray) -> np.ndarray:
    """Price of article ``a`` on ``day``: level, markdowns with age, sale periods, quantised."""
    p = art["price"][a].copy()
    p *= np.where(day > art["markdown1"][a], 0.7, 1.0)
    p *= np.where(day > art["markdown2"][a], 0.7, 1.0)
    p *= np.where(sale & (day - art["launch"][a] > 28), 0.8, 1.0)
    p *= np.where(channel == 1, 0.97, 1.0)
    return np.clip(np.round(p * 5900) / 5900, 1 / 5900, 0.5915)


# -- customers ------------------------------------------------------------------------------
def _customers(rng, n: int, n_days: int) -> dict:
    """Hidden customer state: persona, taste, activity, life cycle, habits."""
    young = rng.random(n) < 0.42
    age = np.where(young, rng.normal(24, 3.5, n), rng.normal(48, 11, n)).clip(16, 99).round()
    male = rng.random(n) < 0.1
    parent = rng.random(n) < np.where((age >= 27) & (age < 48), 0.35, 0.06)
    band = np.digitize(age, [b[1] for b in _AGE_BANDS[1:]])
    persona = band * 4 + male * 2 + parent
    # activity: heavy tailed; the middle-aged buy a little more
    activity = rng.lognormal(0, ACTIVITY_SIGMA, n) * np.where((age > 30) & (age < 60), 1.15, 1.0)
    # life cycle in days from start: joined before the window (55%) or during it
    existing = rng.random(n) < 0.55
    join = np.where(existing, rng.uniform(-700, 0, n), rng.uniform(0, n_days, n))
    stop = join + rng.lognormal(np.log(300), 0.9, n)
    return {"n": n, "age": age, "male": male, "parent": parent, "persona": persona,
            "activity": activity, "join": join, "stop": stop,
            "ramp": rng.uniform(14, 90, n), "decay": rng.lognormal(np.log(200), 0.7, n),
            "repeat": rng.beta(1.0, 9, n), "online": rng.beta(1.5, 0.6, n),
            "basket": rng.lognormal(0, 0.35, n)}


def _favourites(rng, cust: dict, sec_mass: np.ndarray, sec_group: np.ndarray) -> np.ndarray:
    """Three favourite sections per customer, drawn from the persona's index-group affinity."""
    groups = list(INDEX_GROUPS)
    fav = np.zeros((cust["n"], 3), dtype=np.int64)
    for p in np.unique(cust["persona"]):
        idx = np.flatnonzero(cust["persona"] == p)
        band, male, parent = _AGE_BANDS[p // 4][0], bool(p // 2 % 2), bool(p % 2)
        aff = np.array((_AFFINITY_MALE if male else _AFFINITY_FEMALE)[band], dtype=float)
        if parent:
            aff[groups.index(4)] *= _PARENT_BOOST
        w = sec_mass * aff[np.searchsorted(groups, sec_group)]
        fav[idx] = rng.choice(sec_mass.size, (idx.size, 3), p=_norm(w))
    return fav


def _life(cust: dict, t: float) -> np.ndarray:
    """Activity multiplier of every customer on day ``t``: ramp up, decay, 0 outside life."""
    since = t - cust["join"]
    ramp = np.clip(0.3 + since / cust["ramp"], None, 1.0)
    decay = np.exp(-np.clip(since - cust["ramp"], 0, None) / cust["decay"])
    return np.where((since >= 0) & (t < cust["stop"]), ramp * decay, 0.0)


def _customer_frame(rng, cust: dict, n_days: int) -> pd.DataFrame:
    """Visible customer columns, only weakly tied to the hidden state."""
    n = cust["n"]
    z = np.log(cust["activity"]) / ACTIVITY_SIGMA
    fn = rng.random(n) < _sigmoid(-0.75 + 0.3 * z)
    active = np.where(fn, rng.random(n) < 0.97, rng.random(n) < 0.01)
    news = np.where(fn, np.where(rng.random(n) < 0.995, "Regularly", "Monthly"), "NONE").astype(object)
    news[_some(rng, n, 0.0117)] = np.nan
    stopped = cust["stop"] < n_days
    club = np.where(rng.random(n) < _sigmoid(-2.4 - 0.35 * z), "PRE-CREATE", "ACTIVE").astype(object)
    club[rng.random(n) < np.where(stopped, 0.0006, 0.0001)] = "LEFT CLUB"
    club[_some(rng, n, 0.0044)] = np.nan
    age = cust["age"].copy()
    age[_some(rng, n, 0.0116)] = np.nan
    return pd.DataFrame({
        "customer_id": _str(np.sort(_hex_ids(rng, n))),
        "FN": np.where(fn, 1.0, np.nan),
        "Active": np.where(active, 1.0, np.nan),
        "club_member_status": pd.array(club, dtype="str"),
        "fashion_news_frequency": pd.array(news, dtype="str"),
        "age": age,
        "postal_code": _str(_postal_codes(rng, n)),
    })


def _postal_codes(rng, n: int) -> np.ndarray:
    """Very skewed: one code for ~9% of customers (as in Kaggle), the rest long-tailed."""
    codes = _hex_ids(rng, max(2, round(0.257 * n)))
    pick = 1 + rng.choice(codes.size - 1, n, p=_norm(rng.lognormal(0, 0.9, codes.size - 1)))
    pick[rng.random(n) < 0.088] = 0
    return codes[pick]


def _hex_ids(rng, n: int) -> np.ndarray:
    """``n`` random 64-character lowercase hex strings (like Kaggle's hashed ids), as bytes."""
    lut = np.array([f"{i:02x}" for i in range(256)], dtype="S2")
    return lut[rng.integers(0, 256, (n, 32), dtype=np.uint8)].view("S64").ravel()


# -- transactions ---------------------------------------------------------------------------
def _day_weights(start: pd.Timestamp, n_days: int) -> pd.DataFrame:
    """Shop traffic per day: weekday pattern, Black Friday / Christmas / summer-sale peaks."""
    days = start + pd.to_timedelta(np.arange(n_days), unit="D")
    weekday = np.array([0.9, 0.9, 0.95, 1.0, 1.1, 1.2, 1.0])[days.dayofweek]
    doy = days.dayofyear.to_numpy()
    bump = lambda centre, width, h: h * np.exp(-0.5 * ((doy - centre) / width) ** 2)  # noqa: E731
    level = 1 + bump(330, 4, 0.8) + bump(350, 8, 0.4) + bump(182, 10, 0.3) + bump(100, 15, -0.2)
    sale = ((doy >= 360) | (doy <= 20)) | ((doy >= 175) & (doy <= 205))
    return pd.DataFrame({"w": weekday * level, "sale": sale})


def _transactions(rng, cust: dict, art: dict, day_w: pd.DataFrame, n_tx: float) -> dict:
    """Simulate visits week by week; returns arrays day, customer, article, price, channel."""
    n_days = len(day_w)
    n_weeks = -(-n_days // 7)
    g = day_w["w"].to_numpy()
    sale = day_w["sale"].to_numpy()
    n_sec = len(SECTIONS)

    # sections and the articles in them, sorted by section for within-section draws
    by_sec = np.argsort(art["section"], kind="stable")
    sec_bounds = np.searchsorted(art["section"][by_sec], np.arange(n_sec + 1))
    prod = art["product"]
    prod_start = np.searchsorted(prod, np.arange(prod.max() + 2))
    sec_group = np.array([INDEXES[s[2]][1] for s in SECTIONS])
    sec_mass = np.bincount(art["section"], art["pop"], n_sec) + 1e-9
    fav = _favourites(rng, cust, sec_mass, sec_group)

    # rate normaliser: expected rows = sum of weekly base rates x basket size x burst factor
    basket_mean = 1 + 2.0 * cust["basket"]
    base = sum((_life(cust, 7 * w + 3.5) * cust["activity"] * basket_mean).sum()
               * g[7 * w:7 * w + 7].sum() for w in range(n_weeks))
    k = n_tx / (base * RATE_FUDGE) if base > 0 else 0.0
    # a section's typical weight: off season (or when its articles fade) favourites give way
    sec_ref = sum(np.bincount(art["section"], _article_weights(art, 7 * w + 3.5)[0], n_sec)
                  for w in range(n_weeks)) / n_weeks

    K = 8                                         # ring buffer of past purchases
    hist = np.full((cust["n"], K), -1, dtype=np.int32)
    n_hist = np.zeros(cust["n"], dtype=np.int64)
    heat = np.zeros(cust["n"])                    # recent visits, decays each week
    out = []
    for w in range(n_weeks):
        d0, d1 = 7 * w, min(7 * w + 7, n_days)
        gw = g[d0:d1]
        weights, life = _article_weights(art, d0 + 3.5)
        lam = k * cust["activity"] * _life(cust, d0 + 3.5) * gw.sum() * (1 + BURST * (1 - np.exp(-heat)))
        n_vis = rng.poisson(lam)
        newbies = np.flatnonzero((cust["join"] >= max(d0, 0)) & (cust["join"] < d1) & (cust["stop"] > d1))
        heat = 0.55 * heat + n_vis
        v_cust = np.concatenate([np.repeat(np.arange(cust["n"]), n_vis), newbies])
        if v_cust.size == 0:
            continue
        v_day = d0 + np.searchsorted(np.cumsum(gw) / gw.sum(), rng.random(v_cust.size), side="right")
        v_day[v_cust.size - newbies.size:] = np.floor(cust["join"][newbies])   # first visit = join
        lo = np.floor(np.clip(cust["join"][v_cust], d0, d1 - 1))
        hi = np.floor(np.clip(cust["stop"][v_cust], lo, d1 - 1))
        v_day = np.clip(v_day, lo, hi)
        order = np.argsort(v_cust, kind="stable")
        v_cust, v_day = v_cust[order], v_day[order].astype(np.int64)
        v_chan = np.where(rng.random(v_cust.size) < cust["online"][v_cust], 2, 1)
        size = 1 + rng.negative_binomial(1.2, 1.2 / (1.2 + 2.0 * cust["basket"][v_cust]))

        r_vis = np.repeat(np.arange(v_cust.size), size)
        c = v_cust[r_vis]
        pos = np.arange(r_vis.size) - np.repeat(np.cumsum(size) - size, size)
        a = _choose(rng, c, fav, hist, n_hist, cust["repeat"], weights, life, art["section"],
                    sec_ref, by_sec, sec_bounds, prod, prod_start)
        dup = (pos > 0) & (rng.random(r_vis.size) < P_COPY)
        a = a[np.maximum.accumulate(np.where(dup, 0, np.arange(r_vis.size)))]

        # remember purchases: slot = (purchases so far + rank this week) mod K
        first = np.searchsorted(c, c, side="left")
        hist[c, (n_hist[c] + np.arange(c.size) - first) % K] = a
        n_hist += np.bincount(c, minlength=cust["n"])

        day, chan = v_day[r_vis], v_chan[r_vis]
        price = _article_prices(art, a, day, sale[day], chan)
        o = np.lexsort((c, day))
        out.append((day[o].astype(np.int16), c[o].astype(np.int32), a[o].astype(np.int32),
                    price[o], chan[o].astype(np.int8)))
    dtypes = (np.int16, np.int32, np.int32, np.float64, np.int8)
    cols = [np.concatenate([o[i] for o in out] or [np.zeros(0, t)]) for i, t in enumerate(dtypes)]
    return dict(zip(["day", "customer", "article", "price", "channel"], cols))


def _choose(rng, c, fav, hist, n_hist, p_repeat, weights, life, section, sec_ref, by_sec,
            sec_bounds, prod, prod_start) -> np.ndarray:
    """One article per row: a repeat (or colour sibling) if still sold, else a taste pick.

    A taste pick takes a favourite section with probability ``_FAVOURITE_CUTS``, kept with
    probability (section weight now / its typical weight), else a section in proportion to
    the weights now (explore); then an article of the section in proportion to its weight.
    """
    n = c.size
    a = np.full(n, -1, dtype=np.int64)
    rep = (rng.random(n) < p_repeat[c]) & (n_hist[c] > 0)
    if rep.any():
        rc = c[rep]
        cand = hist[rc, rng.integers(0, np.minimum(n_hist[rc], hist.shape[1]))].astype(np.int64)
        sib = rng.random(cand.size) < 0.3
        p = prod[cand[sib]]
        cand[sib] = prod_start[p] + rng.integers(0, prod_start[p + 1] - prod_start[p])
        a[rep] = np.where(life[cand] > 0.05, cand, -1)

    todo = np.flatnonzero(a < 0)
    sec_w = np.bincount(section, weights, sec_bounds.size - 1)
    u = rng.random(todo.size)
    slot = np.searchsorted(_FAVOURITE_CUTS, u, side="right")
    sec = np.where(slot < 3, fav[c[todo], np.minimum(slot, 2)], -1)
    keep = np.clip(sec_w / np.maximum(sec_ref, 1e-12), 0, 1)[np.maximum(sec, 0)]
    explore = (sec < 0) | (rng.random(todo.size) >= keep) | (sec_w[np.maximum(sec, 0)] <= 0)
    cum_sec = np.cumsum(sec_w)
    sec[explore] = np.searchsorted(cum_sec, rng.random(explore.sum()) * cum_sec[-1], side="right")
    sec = np.minimum(sec, sec_w.size - 1)
    cum = np.concatenate([[0.0], np.cumsum(weights[by_sec])])
    lo, hi = cum[sec_bounds[sec]], cum[sec_bounds[sec + 1]]
    pos = np.searchsorted(cum, lo + rng.random(todo.size) * (hi - lo), side="right") - 1
    a[todo] = by_sec[np.clip(pos, sec_bounds[sec], sec_bounds[sec + 1] - 1)]
    return a


def _transaction_frame(tx: dict, customer_id: pd.Series, articles: pd.DataFrame,
                       start: pd.Timestamp) -> pd.DataFrame:
    day = tx["day"].astype("timedelta64[D]").astype("timedelta64[ns]")
    return pd.DataFrame({
        "t_dat": (np.datetime64(start.date(), "ns") + day).astype(TIME_DTYPE),
        "customer_id": customer_id.array.take(tx["customer"]),
        "article_id": articles["article_id"].to_numpy()[tx["article"]],
        "price": tx["price"].astype(np.float64),
        "sales_channel_id": tx["channel"].astype(np.int64),
    })


# -- helpers --------------------------------------------------------------------------------
def _norm(w) -> np.ndarray:
    w = np.asarray(w, dtype=float)
    return w / w.sum()


def _some(rng, n: int, p: float) -> np.ndarray:
    """A mask with each entry True with probability ``p``, and at least one True (so that
    even a tiny database has the missing values the real one has)."""
    mask = rng.random(n) < p
    mask[rng.integers(0, n)] = True
    return mask


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _cat(*parts) -> np.ndarray:
    """Element-wise string concatenation of arrays / scalars (vectorised)."""
    out = np.asarray(parts[0]).astype(object)
    for p in parts[1:]:
        out = out + (np.asarray(p).astype(object) if not isinstance(p, str) else p)
    return out


def _str(a: np.ndarray) -> pd.arrays.ArrowStringArray:
    if a.dtype.kind == "S":
        a = a.astype("U")
    return pd.array(a.astype(str), dtype="str")
