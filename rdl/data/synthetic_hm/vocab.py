"""The Kaggle H&M data contract and vocabularies of the synthetic generator.

The columns of the three frames, the unit of ``t_dat``, the code/name value sets of the
categorical article columns (with relative shares) and the word lists that make up
product names and descriptions.
"""
from __future__ import annotations

import numpy as np

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
