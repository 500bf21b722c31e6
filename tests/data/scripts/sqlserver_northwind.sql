/*
** Copyright Microsoft, Inc. 1994 - 2000
** All Rights Reserved.
*/
SET NOCOUNT ON
GO
USE "master"
GO
if exists (select * from sysobjects where id = object_id('dbo.Orders') and sysstat & 0xf = 3)
	drop table "dbo"."Orders"
GO
CREATE TABLE "Categories" (
	"CategoryID" "int" IDENTITY (1, 1) NOT NULL ,
	"CategoryName" nvarchar (15) NOT NULL ,
	"Picture" "image" NULL ,
	CONSTRAINT "PK_Categories" PRIMARY KEY  CLUSTERED
	(
		"CategoryID"
	)
)
GO
CREATE TABLE "Orders" (
	"OrderID" "int" IDENTITY (1, 1) NOT NULL ,
	"CategoryID" "int" NULL ,
	"OrderDate" "datetime" NULL ,
	"Freight" "money" NULL CONSTRAINT "DF_Orders_Freight" DEFAULT (0),
	CONSTRAINT "PK_Orders" PRIMARY KEY  CLUSTERED
	(
		"OrderID"
	)
)
GO
CREATE TABLE [dbo].[Order Details]
	([OrderID] [int] NOT NULL,
	[Quantity] [smallint] NOT NULL
) ON [PRIMARY]
GO
set quoted_identifier on
go
CREATE PROCEDURE uspLogError
    @ErrorLogID [int] = 0 OUTPUT
AS
BEGIN
    INSERT [dbo].[Orders] (OrderID, CategoryID) VALUES (@ErrorLogID, 1)
    SET @ErrorLogID = @@IDENTITY
END
GO
set identity_insert "Categories" on
go
ALTER TABLE "Categories" NOCHECK CONSTRAINT ALL
go
INSERT "Categories"("CategoryID","CategoryName","Picture") VALUES(1,'Beverages',0x151C2F00020000000D000E0014002100FFFFFFFF4269746D)
INSERT "Categories"("CategoryID","CategoryName","Picture") VALUES(2,N'Condi''ments
Insert, sauces',0x151C2F00)
go
set identity_insert "Categories" off
go
INSERT "Orders" VALUES(10248,1,'7/4/1996',32.38)
INSERT "Orders" VALUES(10249,2,'7/5/1996',11.61)
go
INSERT "Order Details" VALUES(10248,12)
INSERT "Order Details" VALUES(10249,10)
go
ALTER TABLE [Order Details]
	WITH NOCHECK ADD CONSTRAINT [PK_Order_Details] PRIMARY KEY  NONCLUSTERED
	(
		[OrderID]
	) ON [PRIMARY]
GO
ALTER TABLE "Order Details" ADD CONSTRAINT "FK_Order_Details_Orders" FOREIGN KEY
	(
		"OrderID"
	) REFERENCES "dbo"."Orders" (
		"OrderID"
	)
GO
